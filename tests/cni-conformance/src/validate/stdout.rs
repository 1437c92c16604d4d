//! What a plugin may print on stdout: one JSON value or nothing, and which of the two each
//! verb owes.

use super::error_object::parse_error;
use crate::report::excerpt;
use serde_json::Value;

/// What a plugin printed on stdout.
#[derive(Clone, Debug, PartialEq)]
pub enum Stdout {
    /// Nothing, or only whitespace.
    Empty,
    /// Exactly one JSON value (surrounding whitespace allowed).
    Json(Value),
    /// Anything else; the string says what is wrong.
    Invalid(String),
}

pub fn classify_stdout(bytes: &[u8]) -> Stdout {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return Stdout::Invalid(format!("stdout is not UTF-8 ({e})")),
    };
    if text.trim().is_empty() {
        return Stdout::Empty;
    }
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let first = match values.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            return Stdout::Invalid(format!("stdout is not JSON ({e}): {}", excerpt(text)))
        }
        None => return Stdout::Empty,
    };
    match values.next() {
        None => Stdout::Json(first),
        Some(Ok(_)) => Stdout::Invalid(format!(
            "stdout holds more than one JSON value: {}",
            excerpt(text)
        )),
        Some(Err(e)) => Stdout::Invalid(format!(
            "stdout has data after the JSON value ({e}): {}",
            excerpt(text)
        )),
    }
}

/// The stdout rule that holds for every invocation: a successful ADD or
/// VERSION prints exactly one JSON object; any other successful verb prints
/// nothing; a failure prints exactly one error object.
pub fn stdout_violation(verb: Option<&str>, success: bool, out: &Stdout) -> Option<String> {
    let verb_name = verb.unwrap_or("(no CNI_COMMAND)");
    if !success {
        return match out {
            Stdout::Empty => Some(
                "non-zero exit with nothing on stdout (the error must be a JSON object on stdout)"
                    .into(),
            ),
            Stdout::Invalid(why) => Some(format!("non-zero exit: {why}")),
            Stdout::Json(v) => parse_error(v).err(),
        };
    }
    let wants_object = matches!(verb, Some("ADD") | Some("VERSION"));
    match (wants_object, out) {
        (true, Stdout::Json(Value::Object(_))) => None,
        (true, Stdout::Json(v)) => Some(format!(
            "{verb_name} succeeded but printed a non-object: {}",
            excerpt(&v.to_string())
        )),
        (true, Stdout::Empty) => Some(format!("{verb_name} succeeded but printed nothing")),
        (true, Stdout::Invalid(why)) => Some(why.clone()),
        (false, Stdout::Empty) => None,
        (false, Stdout::Json(v)) => Some(format!(
            "{verb_name} succeeded but printed {} (must print nothing)",
            excerpt(&v.to_string())
        )),
        (false, Stdout::Invalid(why)) => {
            Some(format!("{verb_name} succeeded but printed output: {why}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stdout_is_nothing_exactly_one_json_value_or_invalid() {
        assert_eq!(classify_stdout(b""), Stdout::Empty);
        assert_eq!(classify_stdout(b" \n\t"), Stdout::Empty);
        assert_eq!(
            classify_stdout(b"{\"a\":1}\n"),
            Stdout::Json(json!({"a": 1}))
        );
        assert!(matches!(
            classify_stdout(b"{\"a\":1}{\"b\":2}"),
            Stdout::Invalid(_)
        ));
        assert!(matches!(
            classify_stdout(b"{\"a\":1} trailing"),
            Stdout::Invalid(_)
        ));
        assert!(matches!(
            classify_stdout(b"log line\n{\"a\":1}"),
            Stdout::Invalid(_)
        ));
        assert!(matches!(classify_stdout(&[0xff, 0xfe]), Stdout::Invalid(_)));
    }

    #[test]
    fn add_and_version_print_an_object_other_verbs_nothing_failures_an_error() {
        let obj = Stdout::Json(json!({"cniVersion": "1.0.0"}));
        let err = Stdout::Json(json!({"code": 7, "msg": "bad"}));
        assert_eq!(stdout_violation(Some("ADD"), true, &obj), None);
        assert!(stdout_violation(Some("ADD"), true, &Stdout::Empty).is_some());
        assert!(stdout_violation(Some("ADD"), true, &Stdout::Json(json!([1]))).is_some());
        assert_eq!(stdout_violation(Some("DEL"), true, &Stdout::Empty), None);
        assert!(stdout_violation(Some("DEL"), true, &obj).is_some());
        assert!(stdout_violation(Some("CHECK"), true, &obj).is_some());
        assert_eq!(stdout_violation(Some("GC"), false, &err), None);
        assert!(stdout_violation(Some("GC"), false, &Stdout::Empty).is_some());
        assert!(stdout_violation(
            Some("ADD"),
            false,
            &Stdout::Json(json!({"code": "7", "msg": "x"}))
        )
        .is_some());
        assert_eq!(stdout_violation(None, true, &Stdout::Empty), None);
    }
}
