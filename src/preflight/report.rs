//! [`Check`], its [`Verdict`], and the [`Report`] of a set of checks: what every check
//! returns and how the commands print and count them.

use serde::Serialize;

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// Nothing to do.
    Pass,
    /// The run can go ahead, but the user should know.
    Warn,
    /// The run would fail; fix this first.
    Fail,
}

impl Verdict {
    /// `✓`, `!` or `✗`.
    pub(crate) fn mark(self) -> &'static str {
        match self {
            Verdict::Pass => "✓",
            Verdict::Warn => "!",
            Verdict::Fail => "✗",
        }
    }
}

/// One check: what was looked at, the verdict, what was found and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Check {
    /// What was checked (`agent`, `scenario`, `repository`, …).
    pub(crate) name: &'static str,
    /// Pass, warn or fail.
    pub(crate) verdict: Verdict,
    /// What was found, one line or several.
    pub(crate) detail: String,
    /// How to fix it (none for a pass).
    pub(crate) fix: Option<String>,
}

impl Check {
    pub(super) fn pass(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            verdict: Verdict::Pass,
            detail: detail.into(),
            fix: None,
        }
    }

    pub(super) fn warn(
        name: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check::with_fix(name, Verdict::Warn, detail.into(), fix.into())
    }

    pub(super) fn fail(
        name: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check::with_fix(name, Verdict::Fail, detail.into(), fix.into())
    }

    fn with_fix(name: &'static str, verdict: Verdict, detail: String, fix: String) -> Check {
        Check {
            name,
            verdict,
            detail,
            fix: Some(fix),
        }
    }
}

/// Every check of one project, in the order they ran.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Report {
    /// The checks.
    pub(crate) checks: Vec<Check>,
}

impl Report {
    /// Whether any check failed.
    pub(crate) fn failed(&self) -> bool {
        self.checks.iter().any(|c| c.verdict == Verdict::Fail)
    }

    /// Each check as `✓ name: detail`, a fix indented under it; `all` includes passes.
    pub(crate) fn render(&self, all: bool) -> String {
        let mut out = String::new();
        for check in self
            .checks
            .iter()
            .filter(|c| all || c.verdict != Verdict::Pass)
        {
            let mut lines = check.detail.lines();
            out.push_str(&format!(
                "{} {}: {}\n",
                check.verdict.mark(),
                check.name,
                lines.next().unwrap_or("")
            ));
            for line in lines {
                out.push_str(&format!("    {line}\n"));
            }
            if let Some(fix) = &check.fix {
                out.push_str(&format!("    fix: {fix}\n"));
            }
        }
        out
    }
}
