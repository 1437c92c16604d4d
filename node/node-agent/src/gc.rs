//! Garbage collection of attachments whose DEL never came (a crash, a reboot, a runtime bug):
//! which networks our plugins serve on this node, and which attachments of each are alive.

pub mod attachments;
pub mod collect;
pub mod networks;
pub mod round;
