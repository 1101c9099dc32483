//! The recorded Claude Code streams in `tests/fixtures/claude-cli/`, which the parser
//! tests read, must come from the pinned CLI.

use crate::support::claude;

use serde_json::Value;

use crate::claude_cli::{REFRESH_FIXTURES_ENV, fixtures_dir};

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn committed_fixtures_come_from_the_pinned_cli() {
    let cli = claude::require();
    if std::env::var_os(REFRESH_FIXTURES_ENV).is_some() {
        // The other tests are rewriting the files right now.
        return;
    }
    let pinned = cli
        .version()
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    let mut checked = 0;
    for entry in std::fs::read_dir(fixtures_dir()).expect("fixtures dir") {
        let path = entry.expect("fixture entry").path();
        if path
            .extension()
            .is_none_or(|extension| extension != "jsonl")
        {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read fixture");
        let lines: Vec<Value> = text
            .lines()
            .enumerate()
            .map(|(number, line)| {
                serde_json::from_str(line).unwrap_or_else(|error| {
                    panic!("{}:{}: not JSON ({error})", path.display(), number + 1)
                })
            })
            .collect();
        let init = lines
            .iter()
            .find(|line| line["subtype"] == "init")
            .unwrap_or_else(|| panic!("{}: no init line", path.display()));
        assert_eq!(
            init["claude_code_version"],
            pinned.as_str(),
            "{} was recorded with another Claude Code; refresh it with {REFRESH_FIXTURES_ENV}=1 cargo test --test claude_cli",
            path.display()
        );
        checked += 1;
    }
    assert!(
        checked >= 6,
        "expected the committed fixtures, found {checked}"
    );
}
