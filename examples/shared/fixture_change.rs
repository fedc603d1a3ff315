//! The fixture change of the cost examples: four files in two areas, one of
//! them with a real bug (`div` without a zero check).

use crate::common::git::TempRepo;

/// A four-file change in two areas.
pub fn fixture() -> TempRepo {
    let repo = TempRepo::new();
    let body = |name: &str, n: usize| {
        (0..n)
            .map(|i| format!("pub fn {name}_{i}(x: i64) -> i64 {{ x + {i} }}\n"))
            .collect::<String>()
    };
    repo.write("src/parse.rs", body("parse", 40));
    repo.write("src/lex.rs", body("lex", 40));
    repo.write(
        "src/eval.rs",
        format!(
            "pub fn div(a: i64, b: i64) -> i64 {{\n    a\n}}\n{}",
            body("eval", 40)
        ),
    );
    repo.write("tests/eval.rs", "#[test]\nfn t() {}\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "src/parse.rs",
        format!(
            "{}pub fn parse_new(s: &str) -> usize {{ s.len() }}\n",
            body("parse", 40)
        ),
    );
    repo.write(
        "src/lex.rs",
        format!(
            "{}pub fn lex_new(s: &str) -> Vec<char> {{ s.chars().collect() }}\n",
            body("lex", 40)
        ),
    );
    repo.write(
        "src/eval.rs",
        format!(
            "pub fn div(a: i64, b: i64) -> i64 {{\n    // divide\n    a / b\n}}\n{}",
            body("eval", 40)
        ),
    );
    repo.write(
        "tests/eval.rs",
        "#[test]\nfn t() {\n    assert_eq!(super::div(4, 2), 2);\n}\n",
    );
    repo.commit("change");
    repo
}
