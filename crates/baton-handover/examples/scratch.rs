fn main() {
    for p in std::env::args().skip(1) {
        let t = std::fs::read_to_string(&p).unwrap();
        let d = baton_handover::Document::parse(&t);
        let s = baton_handover::Rubric::Baton.score(&d);
        println!("{p}: {} {:?} valid={}", s.score, s.subscores, s.valid);
        for f in &s.findings { println!("   {} {:?} {:?} {}", f.severity, f.line, f.rule, f.message); }
    }
}
