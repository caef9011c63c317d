use turnfence_checks::{dialect, trace};
fn main() {
    let p = std::env::args().nth(1).unwrap();
    let log = std::fs::read_to_string(p).unwrap();
    let checked =
        dialect::check_input_keeping(log.as_bytes(), &Default::default(), trace::Keep::Effective);
    let v = checked.verdict.unwrap();
    for s in v.effective {
        println!("{s}");
    }
}
