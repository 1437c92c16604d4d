use super::*;

#[test]
fn message_words_need_no_escaping_in_cel() {
    for words in [
        range_order("a", "b"),
        pull_policy_change("a", "b"),
        must_not_exceed("a", "b"),
    ] {
        assert!(!words.contains(['\'', '\\']), "{words}");
    }
}
