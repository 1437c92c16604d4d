use super::*;

#[test]
fn the_context_is_the_text_and_the_cause_its_source() {
    let failed: Result<()> = Err(std::io::Error::other("refused").into());
    let e = failed.context("reading Secret x").expect_err("an error");
    assert_eq!(e.to_string(), "reading Secret x");
    let source = std::error::Error::source(&e).map(ToString::to_string);
    assert_eq!(source.as_deref(), Some("refused"));
}

#[test]
fn a_report_reads_each_context_then_the_cause() {
    let e = Error::wrap(
        "reconciling certificates",
        Error::wrap("reading Secret x", std::io::Error::other("refused")),
    );
    assert_eq!(
        error_context::report(&e),
        "reconciling certificates: reading Secret x: refused"
    );
}

#[test]
fn a_carried_error_reads_as_itself() {
    let e = Error::from(CertError::KeyMismatch);
    assert_eq!(
        error_context::report(&e),
        "the private key does not belong to the certificate"
    );
}
