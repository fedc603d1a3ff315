//! Fixed-seed mutation fuzzing of the parsers that read untrusted input: model
//! replies (text-mode ReAct steps, findings), webhook and Actions payloads, and
//! unified diffs. Runs as ordinary unit tests, so CI runs it on every build.
//!
//! Each suite starts from valid seed inputs and derives mutants from them
//! (byte flips, insertions of syntax tokens, deletions, duplications, splices,
//! huge numbers, deep nesting). The sequence of inputs depends only on the seed,
//! so a failure reproduces; a suite stops after [`CASES`] inputs or
//! [`TIME_BUDGET`], whichever comes first, which keeps all suites together
//! within seconds.
//!
//! Properties checked on every input: the parser does not panic, and what it
//! returns is bounded by a multiple of the input's size (no unbounded
//! allocation from a small input).

mod suites;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Inputs tried per suite at most.
pub(crate) const CASES: usize = 20_000;

/// Wall time per suite at most.
pub(crate) const TIME_BUDGET: Duration = Duration::from_secs(3);

/// Longest mutant, in bytes; mutants are cut back to this.
const MAX_INPUT: usize = 64 * 1024;

/// Derives mutants of seed inputs with a seeded generator.
pub(crate) struct Mutator {
    rng: StdRng,
    seeds: Vec<Vec<u8>>,
    tokens: Vec<Vec<u8>>,
}

impl Mutator {
    /// A mutator over `seeds`, inserting `tokens` (syntax of the format) among random bytes.
    pub fn new(seed: u64, seeds: &[&[u8]], tokens: &[&str]) -> Self {
        Mutator {
            rng: StdRng::seed_from_u64(seed),
            seeds: seeds.iter().map(|s| s.to_vec()).collect(),
            tokens: tokens.iter().map(|t| t.as_bytes().to_vec()).collect(),
        }
    }

    /// The next input: a seed as is, now and then, else a seed mutated 1 to 8 times.
    pub(crate) fn next_input(&mut self) -> Vec<u8> {
        let mut input = self.pick_seed();
        if self.rng.random_ratio(1, 20) {
            return input;
        }
        for _ in 0..self.rng.random_range(1..=8) {
            self.mutate(&mut input);
        }
        input.truncate(MAX_INPUT);
        input
    }

    fn pick_seed(&mut self) -> Vec<u8> {
        if self.seeds.is_empty() {
            return Vec::new();
        }
        let index = self.rng.random_range(0..self.seeds.len());
        self.seeds[index].clone()
    }

    fn position(&mut self, input: &[u8]) -> usize {
        self.rng.random_range(0..=input.len())
    }

    fn range(&mut self, input: &[u8]) -> (usize, usize) {
        let start = self.position(input);
        let len = self.rng.random_range(0..=(input.len() - start).min(64));
        (start, start + len)
    }

    fn mutate(&mut self, input: &mut Vec<u8>) {
        match self.rng.random_range(0..9) {
            0 if !input.is_empty() => {
                let at = self.rng.random_range(0..input.len());
                input[at] ^= 1 << self.rng.random_range(0..8);
            }
            1 => {
                let at = self.position(input);
                input.insert(at, self.rng.random());
            }
            2 if !self.tokens.is_empty() => {
                let at = self.position(input);
                let token = self.tokens[self.rng.random_range(0..self.tokens.len())].clone();
                input.splice(at..at, token);
            }
            3 => {
                let (start, end) = self.range(input);
                input.drain(start..end);
            }
            4 => {
                let (start, end) = self.range(input);
                let copy = input[start..end].repeat(self.rng.random_range(1..=40));
                let at = self.position(input);
                input.splice(at..at, copy);
            }
            5 => {
                let at = self.position(input);
                input.truncate(at);
            }
            6 => {
                let other = self.pick_seed();
                let from = self.rng.random_range(0..=other.len());
                let at = self.position(input);
                input.truncate(at);
                input.extend_from_slice(&other[from..]);
            }
            7 => {
                let at = self.position(input);
                let huge = [
                    "18446744073709551616",
                    "-9223372036854775809",
                    "1e999",
                    "4294967296",
                ][self.rng.random_range(0..4)];
                input.splice(at..at, huge.bytes());
            }
            _ => {
                let at = self.position(input);
                let (open, close) = [("[", "]"), ("{\"a\":", "}"), ("(", ")"), ("```\n", "\n```")]
                    [self.rng.random_range(0..4)];
                let depth = self.rng.random_range(1..=300);
                let nested = format!("{}{}", open.repeat(depth), close.repeat(depth));
                input.splice(at..at, nested.into_bytes());
            }
        }
    }
}

/// Feeds the inputs of a `seed`ed [`Mutator`] to `check` until [`CASES`] or
/// [`TIME_BUDGET`]; a panic in `check` fails with the input that caused it.
/// Returns how many inputs were tried.
pub(crate) fn fuzz(
    name: &str,
    seed: u64,
    seeds: &[&[u8]],
    tokens: &[&str],
    mut check: impl FnMut(&[u8]),
) -> usize {
    let mut mutator = Mutator::new(seed, seeds, tokens);
    let started = Instant::now();
    let mut tried = 0;
    let mut slowest = (Duration::ZERO, 0);
    while tried < CASES && started.elapsed() < TIME_BUDGET {
        let input = mutator.next_input();
        let case_started = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| check(&input)));
        slowest = slowest.max((case_started.elapsed(), input.len()));
        if let Err(cause) = outcome {
            let message = cause
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| cause.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let shown: String = String::from_utf8_lossy(&input)
                .chars()
                .take(2_000)
                .collect();
            panic!("{name}: case {tried} (seed {seed}) failed: {message}\ninput: {shown:?}");
        }
        tried += 1;
    }
    eprintln!(
        "{name}: {tried} inputs in {:.1}s; slowest {:.1} ms ({} bytes)",
        started.elapsed().as_secs_f64(),
        slowest.0.as_secs_f64() * 1000.0,
        slowest.1
    );
    tried
}

/// Asserts that `output_len` is within `factor` times `input_len` plus `slack`.
pub(crate) fn assert_bounded(
    what: &str,
    input_len: usize,
    output_len: usize,
    factor: usize,
    slack: usize,
) {
    assert!(
        output_len <= input_len * factor + slack,
        "{what}: {output_len} bytes out of {input_len} bytes in"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_inputs() {
        let seeds: &[&[u8]] = &[b"{\"a\": [1, 2]}", b"Action: read_file"];
        let run = |seed| {
            let mut m = Mutator::new(seed, seeds, &["{", "\""]);
            (0..50).map(|_| m.next_input()).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        assert!(run(7).iter().all(|i| i.len() <= MAX_INPUT));
    }

    #[test]
    fn a_panicking_parser_is_reported_with_its_input() {
        let outcome = catch_unwind(|| {
            fuzz("demo", 1, &[b"abc"], &[], |input| {
                assert!(!input.contains(&b'b') || input.len() < 2, "found b");
            })
        });
        let message = outcome
            .unwrap_err()
            .downcast_ref::<String>()
            .cloned()
            .unwrap();
        assert!(
            message.contains("demo: case") && message.contains("found b"),
            "{message}"
        );
    }
}
