//! How a diagnostic is drawn on stderr: miette's graphical report, wrapped on a terminal,
//! with the source excerpt left out where the line it would show is too long to read.
//!
//! A config or scenario file can hold a line of any length. Drawn, such a line is pages
//! of wrapped text, and miette 7's graphical handler pads to a label's column with a
//! format width, which panics past 65,535 columns; the message already names the file,
//! line and column, so the report goes on without the excerpt.

use std::fmt;

use miette::{Diagnostic, LabeledSpan, ReportHandler, SourceCode};

/// The longest source line, in bytes, drawn as an excerpt under a diagnostic.
pub const MAX_EXCERPT_LINE: usize = 400;

/// Set how diagnostics are drawn, before the first one is made: wrapped to the
/// terminal's width on a terminal; off one (a pipe, a log file, CI) never wrapped, so a
/// path or an id stays whole on its line, to be copied or searched for.
pub fn install_style() {
    let wrap = std::io::IsTerminal::is_terminal(&std::io::stderr());
    // It fails only when a hook is set already, which then stays.
    let _ = miette::set_hook(Box::new(move |_| {
        Box::new(Excerpts(
            miette::MietteHandlerOpts::new().wrap_lines(wrap).build(),
        ))
    }));
}

/// A report handler that draws a diagnostic's excerpt only when every line it shows
/// is at most [`MAX_EXCERPT_LINE`] bytes long.
struct Excerpts<H>(H);

impl<H: ReportHandler> ReportHandler for Excerpts<H> {
    fn debug(&self, diagnostic: &dyn Diagnostic, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if excerpt_fits(diagnostic) {
            self.0.debug(diagnostic, f)
        } else {
            self.0.debug(&WithoutExcerpt(diagnostic), f)
        }
    }
}

/// Whether the lines `diagnostic`'s labels point into are short enough to draw (or it
/// has none).
fn excerpt_fits(diagnostic: &dyn Diagnostic) -> bool {
    let (Some(source), Some(mut labels)) = (diagnostic.source_code(), diagnostic.labels()) else {
        return true;
    };
    labels.all(|label| lines_fit(source, &label))
}

/// Whether the lines drawn around `label`, one of context on each side as the graphical
/// handler draws them, are short enough.
fn lines_fit(source: &dyn SourceCode, label: &LabeledSpan) -> bool {
    // A span miette cannot read is drawn as miette draws it.
    source
        .read_span(label.inner(), 1, 1)
        .map_or(true, |contents| {
            contents
                .data()
                .split(|byte| *byte == b'\n')
                .all(|line| line.len() <= MAX_EXCERPT_LINE)
        })
}

/// A diagnostic as it is, but for its excerpt: no source and no labels.
struct WithoutExcerpt<'a>(&'a dyn Diagnostic);

impl fmt::Debug for WithoutExcerpt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0, f)
    }
}

impl fmt::Display for WithoutExcerpt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.0, f)
    }
}

impl std::error::Error for WithoutExcerpt<'_> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl Diagnostic for WithoutExcerpt<'_> {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0.code()
    }

    fn severity(&self) -> Option<miette::Severity> {
        self.0.severity()
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0.help()
    }

    fn url<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0.url()
    }

    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        self.0.related()
    }

    fn diagnostic_source(&self) -> Option<&dyn Diagnostic> {
        self.0.diagnostic_source()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error, Diagnostic)]
    #[error("bad value at line 1")]
    #[diagnostic(code(test::bad), help("fix it"))]
    struct Bad {
        #[source_code]
        text: String,
        #[label("here")]
        span: miette::SourceSpan,
    }

    fn bad_at_column(column: usize) -> Bad {
        let text = format!("{}x\n", " ".repeat(column));
        Bad {
            text,
            span: (column, 1).into(),
        }
    }

    fn drawn(diagnostic: &dyn Diagnostic) -> String {
        struct Drawn<'a>(&'a dyn Diagnostic);
        impl fmt::Display for Drawn<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let handler = miette::GraphicalReportHandler::new_themed(
                    miette::GraphicalTheme::unicode_nocolor(),
                );
                Excerpts(HandlerOf(handler)).debug(self.0, f)
            }
        }
        Drawn(diagnostic).to_string()
    }

    /// The graphical handler as a [`ReportHandler`], as miette's own handler wraps it.
    struct HandlerOf(miette::GraphicalReportHandler);

    impl ReportHandler for HandlerOf {
        fn debug(&self, diagnostic: &dyn Diagnostic, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.render_report(f, diagnostic)
        }
    }

    #[test]
    fn a_short_line_is_drawn_under_the_message() {
        let text = drawn(&bad_at_column(4));
        assert!(text.contains("bad value at line 1"), "{text}");
        assert!(text.contains("here"), "the label: {text}");
        assert!(text.contains("help: fix it"), "{text}");
    }

    #[test]
    fn a_label_past_65535_columns_leaves_the_excerpt_out_and_keeps_the_rest() {
        let text = drawn(&bad_at_column(70_000));
        assert!(text.contains("bad value at line 1"), "{text}");
        assert!(text.contains("help: fix it"), "{text}");
        assert!(!text.contains("here"), "no excerpt: {text}");
        assert!(text.len() < 1_000, "{} bytes drawn", text.len());
    }

    #[test]
    fn a_line_just_too_long_to_read_is_left_out_too() {
        assert!(drawn(&bad_at_column(MAX_EXCERPT_LINE - 2)).contains("here"));
        assert!(!drawn(&bad_at_column(MAX_EXCERPT_LINE)).contains("here"));
    }
}
