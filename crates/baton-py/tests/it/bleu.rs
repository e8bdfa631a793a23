//! `baton-bleu` keeps its own whitespace set (it depends on no other baton crate); the two must
//! never drift apart.

#[test]
fn whitespace_agrees_with_baton_bleu_on_every_code_point() {
    let differ: Vec<String> = (0..=0x10_ffff_u32)
        .filter_map(char::from_u32)
        .filter(|&c| baton_py::is_space(c) != baton_bleu::is_python_whitespace(c))
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect();
    assert!(differ.is_empty(), "is_space differs on {differ:?}");
}

#[test]
fn strip_agrees_with_baton_bleu_on_every_code_point() {
    for c in (0..=0x10_ffff_u32).filter_map(char::from_u32) {
        let s = format!("{c}{c}x{c}y{c}");
        assert_eq!(
            baton_py::strip(&s),
            baton_bleu::python_strip(&s),
            "U+{:04X}",
            u32::from(c)
        );
    }
}
