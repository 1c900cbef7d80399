//! Replays the stored fuzz corpus (fuzz/corpus/TARGET/*) through the fuzz
//! target bodies, so every input that ever found a bug, or that the fuzzer
//! kept for coverage, is checked on every test run.

use std::path::Path;

#[test]
fn corpus_replays_cleanly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut total = 0;
    for (name, target) in msgr_fuzz_targets::TARGETS {
        let dir = root.join(name);
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut n = 0;
        for entry in entries {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            target(&data);
            n += 1;
        }
        assert!(n > 0, "no corpus for {name}");
        total += n;
    }
    assert!(total > 0);
}
