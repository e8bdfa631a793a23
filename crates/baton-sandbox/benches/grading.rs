//! Grading benchmark (filled in below).
fn main() {}
