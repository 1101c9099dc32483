//! `debussy replay FILE.jsonl`: feed a saved session transcript through the stream-json
//! parser and the context meter, and show per main-thread turn the context in use and
//! where a stop would have fired. It is how thresholds are debugged on real data.
//!
//! The file is streamed line by line, never loaded whole. Thresholds default to the
//! configuration's (`context_threshold`, `tool_call_threshold`,
//! `agent.token_estimate_factor`, `agent.model_context_window`).

use std::fs::File;
use std::io::{BufRead, BufReader, Write};

use crate::session::CONTEXT_LIMIT_MARKER;
use std::path::Path;

use serde::Serialize;

use crate::agent::{AgentEvent, UsageReporting, stream_json};
use crate::cli::{GlobalArgs, ReplayArgs, ReportFormat};
use crate::context::{
    ContextLimit, ContextMeter, MeterSettings, Snapshot, StopReason, WindowInputs, group,
};
use crate::exit::{CommandResult, Exit, Failure};

pub(super) fn run(global: &GlobalArgs, args: &ReplayArgs) -> CommandResult {
    let loaded = super::load_config(global, None)?;
    let config = &loaded.config;
    let mut settings = MeterSettings::from_config(config, UsageReporting::PerMessage);
    if let Some(threshold) = args.context_threshold {
        settings.threshold = ContextLimit::from(threshold).check().map_err(|_| {
            Failure::usage(miette::miette!(
                help = "give a percent above 0 and at most 100 (100 disables the check)",
                "--context-threshold {threshold} is out of range"
            ))
        })?;
    }
    if args.window == Some(0) {
        return Err(Failure::usage(miette::miette!(
            "--window must be a positive number of tokens"
        )));
    }
    let inputs = WindowInputs {
        configured: args.window.or(config.agent.model_context_window),
        ..WindowInputs::default()
    };
    let file = File::open(&args.file).map_err(|err| {
        Failure::usage(miette::miette!(
            "cannot open transcript {}: {err}",
            args.file.display()
        ))
    })?;
    let report =
        replay(BufReader::with_capacity(1 << 20, file), settings, inputs).map_err(|err| {
            Failure::failed(miette::miette!(
                "failed to read transcript {}: {err}",
                args.file.display()
            ))
        })?;
    if report.transcript_lines == 0 {
        // A report of nothing would read as "no stop would fire"; say what is wrong.
        return Err(Failure::failed(miette::miette!(
            help = "replay reads a session log saved by `debussy run` \
                    (.debussy/runs/RUN/PHASE/attempt-N-session-K.jsonl) or the output of \
                    `claude -p --output-format stream-json --verbose`",
            "{} has no transcript lines ({} read)",
            args.file.display(),
            count(report.lines, "line")
        )));
    }
    let mut out = std::io::stdout().lock();
    let written = match args.format {
        ReportFormat::Text => write_text(&mut out, &args.file, &report),
        ReportFormat::Json => serde_json::to_writer_pretty(&mut out, &report)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out)),
    };
    match written {
        // Output piped into `head` that closed early is not an error.
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(Failure::failed(
            miette::miette!("failed to write the replay report: {err}"),
        )),
        _ => Ok(Exit::Success),
    }
}

/// What a replay found.
#[derive(Debug, Serialize)]
struct Report {
    #[serde(rename = "threshold_percent")]
    threshold: ContextLimit,
    tool_call_threshold: u32,
    turns: Vec<TurnRow>,
    stop: Option<StopAt>,
    #[serde(rename = "final")]
    end: Snapshot,
    lines: u64,
    subagent_lines: u64,
    unknown_lines: u64,
    text_lines: u64,
    /// Lines the parser recognised as agent output.
    #[serde(skip)]
    transcript_lines: u64,
}

/// One main-thread assistant message.
#[derive(Debug, Serialize)]
struct TurnRow {
    turn: u32,
    line: u64,
    message_id: Option<String>,
    tokens: u64,
    percent: f64,
    tool_calls: u32,
}

/// Where the stop fired.
#[derive(Debug, Serialize)]
struct StopAt {
    line: u64,
    turn: u32,
    message: String,
    reason: StopReason,
}

fn replay(
    mut reader: impl BufRead,
    settings: MeterSettings,
    inputs: WindowInputs,
) -> std::io::Result<Report> {
    let mut report = Report {
        threshold: settings.threshold,
        tool_call_threshold: settings.tool_call_threshold,
        turns: Vec::new(),
        stop: None,
        end: ContextMeter::new(settings.clone(), inputs.clone()).snapshot(),
        lines: 0,
        subagent_lines: 0,
        unknown_lines: 0,
        text_lines: 0,
        transcript_lines: 0,
    };
    let mut meter = ContextMeter::new(settings, inputs);
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        report.lines += 1;
        // The marker debussy puts first in the log of a session it stopped for its
        // context: not agent output. It still counts, so line numbers match the file.
        if report.lines == 1 && buf.trim_ascii_end() == CONTEXT_LIMIT_MARKER.as_bytes() {
            continue;
        }
        let Some(event) = stream_json::parse_line(&buf) else {
            continue;
        };
        match &event {
            AgentEvent::Unknown(_) => report.unknown_lines += 1,
            AgentEvent::Text(_) => report.text_lines += 1,
            _ if !event.is_main_thread() => {
                report.subagent_lines += 1;
                report.transcript_lines += 1;
            }
            _ => report.transcript_lines += 1,
        }
        let turns_before = meter.turns();
        let stop = meter.observe(&event);
        if let AgentEvent::Assistant(message) = &event
            && message.parent_tool_use_id.is_none()
        {
            let snapshot = meter.snapshot();
            if meter.turns() > turns_before {
                report.turns.push(TurnRow {
                    turn: snapshot.turns,
                    line: report.lines,
                    message_id: message.message_id.clone(),
                    tokens: snapshot.tokens,
                    percent: snapshot.percent,
                    tool_calls: snapshot.tool_calls,
                });
            } else if let Some(row) = report.turns.last_mut() {
                row.tool_calls = snapshot.tool_calls;
            }
        }
        if let Some(reason) = stop {
            report.stop = Some(StopAt {
                line: report.lines,
                turn: meter.turns(),
                message: reason.to_string(),
                reason,
            });
        }
    }
    report.end = meter.snapshot();
    Ok(report)
}

fn write_text(out: &mut impl Write, file: &Path, report: &Report) -> std::io::Result<()> {
    let end = &report.end;
    writeln!(out, "replay of {}", file.display())?;
    let model = end.model.as_deref().unwrap_or("unknown model");
    let percent_rule = match report.threshold.percent() {
        Some(percent) => format!("stop at {percent}% of the window"),
        None => "context check disabled".to_owned(),
    };
    let tool_rule = if report.tool_call_threshold == 0 {
        "no tool-call limit".to_owned()
    } else {
        format!("or {} main-thread tool calls", report.tool_call_threshold)
    };
    writeln!(out, "{model}; {percent_rule} {tool_rule}")?;
    writeln!(out)?;
    writeln!(
        out,
        "{:>5}  {:>7}  {:>10}  {:>8}  {:>10}",
        "turn", "line", "tokens", "context", "tool calls"
    )?;
    let stop_turn = report.stop.as_ref().map(|stop| stop.turn);
    let mut stop_printed = false;
    for row in &report.turns {
        writeln!(
            out,
            "{:>5}  {:>7}  {:>10}  {:>7.1}%  {:>10}",
            row.turn,
            row.line,
            group(row.tokens),
            row.percent,
            row.tool_calls
        )?;
        if stop_turn == Some(row.turn)
            && let Some(stop) = &report.stop
        {
            writeln!(
                out,
                "  -> stop would fire at line {}: {}",
                stop.line, stop.message
            )?;
            stop_printed = true;
        }
    }
    if !stop_printed && let Some(stop) = &report.stop {
        writeln!(
            out,
            "  -> stop would fire at line {}: {}",
            stop.line, stop.message
        )?;
    }
    writeln!(out)?;
    let exactness = match end.exactness {
        crate::context::Exactness::Exact => "exact",
        crate::context::Exactness::Estimated => "estimated",
    };
    writeln!(
        out,
        "end: {} / {} tokens ({:.1}%, {exactness}); window: {}",
        group(end.tokens),
        group(end.window.tokens),
        end.percent,
        end.window.source
    )?;
    let mut totals = format!(
        "{}, {}, {}, {} ignored",
        count(report.lines, "line"),
        count(end.turns.into(), "main-thread turn"),
        count(end.tool_calls.into(), "main-thread tool call"),
        count(report.subagent_lines, "subagent line")
    );
    if report.unknown_lines + report.text_lines > 0 {
        totals.push_str(&format!(
            ", {} and {}",
            count(report.unknown_lines, "unknown line"),
            count(report.text_lines, "non-JSON line")
        ));
    }
    if let Some(cost) = end.cost_usd {
        totals.push_str(&format!(", cost ${cost:.4}"));
    }
    writeln!(out, "{totals}")?;
    if report.stop.is_none() {
        writeln!(out, "no stop would have fired")?;
    }
    Ok(())
}

/// `1 line`, `2 lines`.
fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
