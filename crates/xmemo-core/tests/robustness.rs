//! Poor man's fuzzing (deterministic, bounded): mutated SKILL.md files and ZIP archives
//! must give `Ok` or a `PackageError`, never a panic or a hang. The parsers are pure
//! functions of bytes, so a cargo-fuzz target can call the same entry points.

mod common;

use common::*;
use std::time::{Duration, Instant};
use xmemo_core::package::{ArchiveLimits, parse_skill_md, read_skill_md, read_zip};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Iterations per test: `XMEMO_FUZZ_ITERS` to run longer locally.
fn iterations(default: usize) -> usize {
    std::env::var("XMEMO_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const INTERESTING: &[&[u8]] = &[
    b"---",
    b"\n",
    b"\r\n",
    b": ",
    b"- ",
    b"&a ",
    b"*a",
    b"!!str ",
    b"{",
    b"[",
    b"'",
    b"\"",
    b"\xEF\xBB\xBF",
    b"\xff",
    b"\0",
    b"|-\n  ",
    b"name",
    b"description",
    b"\t",
    b"? ",
];

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(4) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = rng.next() as u8;
            }
            1 if !out.is_empty() => {
                let end = (at + rng.below(8)).min(out.len());
                out.drain(at.min(end)..end);
            }
            _ => {
                let piece = INTERESTING[rng.below(INTERESTING.len())];
                let at = at.min(out.len());
                out.splice(at..at, piece.iter().copied());
            }
        }
    }
    out
}

#[test]
fn mutated_skill_md_never_panics() {
    let seed: &[u8] = b"---\nname: demo\ndescription: >\n  folded text\nlicense: MIT\nmetadata:\n  a: [1, 2, {b: c}]\n  anchor: &x {k: v}\n  alias: *x\nallowed-tools: Bash Read\n---\n\n# Body\r\nline\n";
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let start = Instant::now();
    let mut ok = 0;
    for _ in 0..iterations(20_000) {
        let input = mutate(&mut rng, seed);
        if parse_skill_md(&input).is_ok() {
            ok += 1;
        }
        let _ = read_skill_md(&input);
    }
    assert!(ok > 0, "some mutations should still parse");
    assert!(start.elapsed() < Duration::from_secs(600));
}

#[test]
fn mutated_archives_never_panic() {
    let zip = zip_of(&[
        ("demo/SKILL.md", SKILL_MD),
        ("demo/scripts/run.py", b"print('ok')\n"),
        ("demo/assets/blob.bin", &noise(2048, 3)),
        ("demo/references/a.md", &b"repeat ".repeat(500)),
    ]);
    let limits = ArchiveLimits::default();
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let start = Instant::now();
    for _ in 0..iterations(10_000) {
        let mut input = zip.clone();
        for _ in 0..1 + rng.below(3) {
            let i = rng.below(input.len());
            input[i] = rng.next() as u8;
        }
        if rng.below(8) == 0 {
            let cut = rng.below(input.len());
            input.truncate(cut);
        }
        let _ = read_zip(&input, &limits);
    }
    assert!(start.elapsed() < Duration::from_secs(600));
}
