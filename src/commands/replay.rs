//! `debussy replay FILE.jsonl`: feed a saved session transcript through its parser and
//! the context meter, and show per main-thread turn (per model request for Codex) the
//! context in use and where a stop would have fired. It is how thresholds are debugged
//! on real data.
//!
//! The format is detected from the first lines ([`Format`]): Claude Code's stream-json
//! (and the sim agent's), a Codex rollout, or the Gemini CLI's stream-json (estimated
//! throughout). A Codex session's stdout log holds no usage;
//! given one, replay reads the rollout debussy kept beside it. The file is streamed line
//! by line, never loaded whole: only a regular file is opened (a FIFO or a device is
//! refused), and a line longer than the longest debussy reads from an agent
//! ([`DEFAULT_MAX_LINE`]) is skipped and counted. Thresholds default to the
//! configuration's (`context_threshold`, `tool_call_threshold`,
//! `agent.token_estimate_factor`, `agent.model_context_window`).

use std::io::{BufRead, BufReader, Write};

use crate::session::CONTEXT_LIMIT_MARKER;
use std::path::Path;

use serde::Serialize;

use crate::agent::codex::rollout;
use crate::agent::{AgentEvent, UsageReporting, stream_json};
use crate::cli::{GlobalArgs, ReplayArgs, ReportFormat};
use crate::context::{
    ContextLimit, ContextMeter, MeterSettings, Snapshot, StopReason, WindowInputs,
};
use crate::exit::{CommandResult, Exit, Failure};
use crate::files::{LineRead, read_line_limited};
use crate::process::DEFAULT_MAX_LINE;
use crate::words::thousands;

pub(super) fn run(global: &GlobalArgs, args: &ReplayArgs) -> CommandResult {
    let loaded = super::load_config(global, None)?;
    let config = &loaded.config;
    let mut settings = crate::session::meter_settings(config, UsageReporting::PerMessage);
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
        configured: args
            .window
            .or(crate::session::default_backend_settings(config).model_context_window),
        ..WindowInputs::default()
    };
    let open = |path: &Path| {
        crate::files::open_regular(path).map_err(|err| {
            Failure::usage(miette::miette!(
                "cannot open transcript {}: {err}",
                path.display()
            ))
        })
    };
    let mut path = args.file.clone();
    let mut format = detect(&mut BufReader::new(open(&path)?)).unwrap_or(Format::Claude);
    if format == Format::CodexExec {
        let home = crate::session::home::home_path(&path);
        path = codex_rollout(&home).ok_or_else(|| {
            Failure::usage(miette::miette!(
                help = "replay the rollout file Codex wrote for the session (under                         $CODEX_HOME/sessions/, or the session's .home/sessions/ in a debussy run)",
                "{} is `codex exec --json` output, which carries no usage, and no rollout was found under {}",
                args.file.display(),
                home.display()
            ))
        })?;
        format = Format::CodexRollout;
    }
    match format {
        Format::CodexRollout => settings.usage_reporting = UsageReporting::PerRequest,
        Format::Gemini => settings.usage_reporting = UsageReporting::Nothing,
        Format::Claude | Format::CodexExec => {}
    }
    let report = replay(
        BufReader::with_capacity(1 << 20, open(&path)?),
        format,
        settings,
        inputs,
    )
    .map_err(|err| {
        Failure::failed(miette::miette!(
            "failed to read transcript {}: {err}",
            args.file.display()
        ))
    })?;
    if report.transcript_lines == 0 {
        // A report of nothing would read as "no stop would fire"; say what is wrong.
        return Err(Failure::failed(miette::miette!(
            help = "replay reads a session log saved by `debussy run` \
                    (.debussy/runs/RUN/PHASE/attempt-N-session-K.jsonl), the output of \
                    `claude -p --output-format stream-json --verbose`, or a Codex rollout",
            "{} has no transcript lines ({} read)",
            args.file.display(),
            count(report.lines, "line")
        )));
    }
    let mut out = std::io::stdout().lock();
    let written = match args.format {
        ReportFormat::Text => {
            let mut text = Vec::new();
            write_text(&mut text, &path, &report).and_then(|()| {
                let text = String::from_utf8_lossy(&text);
                out.write_all(crate::terminal_safe::terminal_safe(&text).as_bytes())
            })
        }
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

/// The transcript formats replay reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Claude Code's stream-json, which the sim agent prints too.
    Claude,
    /// A Codex rollout file: one `{timestamp, type, payload}` record per line.
    CodexRollout,
    /// What `codex exec --json` prints (no usage: its rollout is read instead).
    CodexExec,
    /// The Gemini CLI's stream-json (no usage until the end: everything is estimated).
    Gemini,
}

/// The fields that tell the formats apart.
#[derive(serde::Deserialize)]
struct Probe {
    #[serde(rename = "type")]
    kind: Option<String>,
    payload: Option<serde::de::IgnoredAny>,
    timestamp: Option<serde::de::IgnoredAny>,
}

/// The format of the first JSON line among the first few; `None` when none is JSON.
fn detect(reader: &mut impl BufRead) -> Option<Format> {
    let mut line = Vec::new();
    for _ in 0..16 {
        match read_line_limited(reader, &mut line, DEFAULT_MAX_LINE).ok()? {
            LineRead::End => return None,
            LineRead::TooLong { .. } => continue,
            LineRead::Line => {}
        }
        let Ok(probe) = serde_json::from_slice::<Probe>(&line) else {
            continue;
        };
        let kind = probe.kind.unwrap_or_default();
        return Some(if probe.payload.is_some() && probe.timestamp.is_some() {
            Format::CodexRollout
        } else if kind.starts_with("thread.")
            || kind.starts_with("turn.")
            || kind.starts_with("item.")
        {
            Format::CodexExec
        } else if kind == "init" {
            Format::Gemini
        } else {
            Format::Claude
        });
    }
    None
}

/// The rollout under a Codex session's private home, if there is one.
fn codex_rollout(home: &Path) -> Option<std::path::PathBuf> {
    let mut dirs = vec![home.join("sessions")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if entry.file_name().to_string_lossy().starts_with("rollout-") {
                return Some(path);
            }
        }
    }
    None
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
    /// Lines longer than [`DEFAULT_MAX_LINE`], skipped (a session skips them too).
    long_lines: u64,
    /// Lines the parser recognised as agent output.
    #[serde(skip)]
    transcript_lines: u64,
    /// The agent reports usage only in its totals at the end (Gemini).
    #[serde(skip)]
    totals_only: bool,
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
    format: Format,
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
        long_lines: 0,
        transcript_lines: 0,
        totals_only: format == Format::Gemini,
    };
    let mut meter = ContextMeter::new(settings, inputs);
    let gemini = crate::agent::gemini::stream_json::Parser::with_prompt();
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        match read_line_limited(&mut reader, &mut buf, DEFAULT_MAX_LINE)? {
            LineRead::End => break,
            LineRead::TooLong { .. } => {
                report.lines += 1;
                report.long_lines += 1;
                continue;
            }
            LineRead::Line => {}
        }
        report.lines += 1;
        // The marker debussy puts first in the log of a session it stopped for its
        // context: not agent output. It still counts, so line numbers match the file.
        if report.lines == 1 && buf.trim_ascii_end() == CONTEXT_LIMIT_MARKER.as_bytes() {
            continue;
        }
        let events = match format {
            Format::Claude | Format::CodexExec => {
                stream_json::parse_line(&buf).into_iter().collect()
            }
            Format::CodexRollout => rollout::parse_line(&buf, rollout::Mode::Full),
            Format::Gemini => gemini.parse_line(&buf),
        };
        for event in events {
            observe(&mut report, &mut meter, format, &event);
        }
    }
    report.end = meter.snapshot();
    Ok(report)
}

/// One event of line `report.lines`: count it, meter it, and add the turn row it starts.
fn observe(report: &mut Report, meter: &mut ContextMeter, format: Format, event: &AgentEvent) {
    match event {
        AgentEvent::Unknown(_) => report.unknown_lines += 1,
        AgentEvent::Text(_) => report.text_lines += 1,
        _ if !event.is_main_thread() => {
            report.subagent_lines += 1;
            report.transcript_lines += 1;
        }
        _ => report.transcript_lines += 1,
    }
    let turns_before = meter.turns();
    let stop = meter.observe(event);
    // A Codex request ends with its token count: one row per request.
    if format == Format::CodexRollout {
        if let AgentEvent::UsageReport(usage) = event
            && usage.request_id.is_some()
        {
            let snapshot = meter.snapshot();
            let turn = u32::try_from(report.turns.len() + 1).unwrap_or(u32::MAX);
            report.turns.push(TurnRow {
                turn,
                line: report.lines,
                message_id: None,
                tokens: snapshot.tokens,
                percent: snapshot.percent,
                tool_calls: snapshot.tool_calls,
            });
        }
    } else if let AgentEvent::Assistant(message) = event
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
        let turn = match format {
            // A request's first report comes before its row.
            Format::CodexRollout => {
                let pending = matches!(event, AgentEvent::UsageReport(u) if u.request_id.is_none());
                u32::try_from(report.turns.len() + usize::from(pending)).unwrap_or(u32::MAX)
            }
            _ => meter.turns(),
        };
        report.stop = Some(StopAt {
            line: report.lines,
            turn,
            message: reason.to_string(),
            reason,
        });
    }
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
        format!(
            "or {} main-thread tool call{}",
            report.tool_call_threshold,
            crate::words::plural(report.tool_call_threshold)
        )
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
            thousands(row.tokens),
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
        thousands(end.tokens),
        thousands(end.window.tokens),
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
    if report.long_lines > 0 {
        totals.push_str(&format!(
            ", {} over {} MiB skipped",
            count(report.long_lines, "line"),
            DEFAULT_MAX_LINE / (1024 * 1024)
        ));
    }
    if let Some(cost) = end.cost_usd {
        totals.push_str(&format!(", cost ${cost:.4}"));
    }
    writeln!(out, "{totals}")?;
    if report.totals_only && end.billed != crate::context::cost::Billed::default() {
        // An agent that reports usage only at the end (Gemini): its totals beside the
        // estimate show how far off the estimate may be.
        writeln!(
            out,
            "the agent reported {} input and {} output tokens, summed over its requests",
            thousands(end.billed.input + end.billed.cache_read + end.billed.cache_write),
            thousands(end.billed.output)
        )?;
    }
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
