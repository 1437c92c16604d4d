//! Pure logic of the suite, one module per thing it judges: CNI versions, the shape of a
//! plugin's stdout, error objects, VERSION replies, result formats per version, the summary of
//! a result, and chaining (the synthesized prevResult and its pass-through).
//!
//! Nothing here touches the system, so all of it is unit-tested.

pub mod chaining;
pub mod error_object;
pub mod result;
pub mod stdout;
pub mod summary;
pub mod version_reply;
pub mod versions;
