//! The default gate commands: what a plan's gate bullet runs when it names no command.
//!
//! To add one, add it here, to `config/default.yaml` (with a comment) and to the table
//! of default gates in `docs/config.md`; the configuration tests fail until all three
//! agree.

use std::collections::BTreeMap;

/// Gate commands for common tools, so plans can say `- pytest: all pass` without a command.
pub(crate) fn default_gates() -> BTreeMap<String, String> {
    [
        ("cargo-build", "cargo build --all-targets"),
        ("cargo-test", "cargo test --all"),
        ("cargo-clippy", "cargo clippy --all-targets -- -D warnings"),
        ("cargo-fmt", "cargo fmt --check"),
        ("clippy", "cargo clippy --all-targets -- -D warnings"),
        ("pytest", "pytest"),
        ("ruff", "ruff check ."),
        ("ruff-format", "ruff format --check ."),
        ("pyright", "pyright"),
        ("mypy", "mypy ."),
        ("bandit", "bandit -r ."),
        ("black", "black --check ."),
        ("npm-test", "npm test"),
        ("npm-lint", "npm run lint"),
        ("npm-build", "npm run build"),
        ("npm-audit", "npm audit"),
        ("pnpm-test", "pnpm test"),
        ("pnpm-lint", "pnpm lint"),
        ("pnpm-build", "pnpm build"),
        ("pnpm-audit", "pnpm audit"),
        ("tsc", "npx tsc --noEmit"),
        ("eslint", "npx eslint ."),
        ("prettier", "npx prettier --check ."),
        ("go-test", "go test ./..."),
        ("go-vet", "go vet ./..."),
        ("golangci-lint", "golangci-lint run"),
    ]
    .into_iter()
    .map(|(name, command)| (name.to_owned(), command.to_owned()))
    .collect()
}
