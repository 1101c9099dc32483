//! Decides what answers each request: classifies it (main thread, subagent,
//! compaction, side request, token count, probe, unknown) and plays the next turn of
//! the matching script.
//!
//! Classification uses what Claude Code 2.x really sends (observed with 2.1.330):
//! - every model call is `POST /v1/messages?beta=true`;
//! - compaction (auto or `/compact`) is a streaming call on the main model whose last
//!   user message asks to "create a detailed summary of the conversation";
//! - subagent calls carry `cc_is_subagent=true` in the first system block (the
//!   billing header) and the subagent's prompt as the last text of the first user
//!   message;
//! - the main thread streams and offers tools;
//! - debussy's handoff request (a stopped session resumed without tools) is the one
//!   whose last user message begins with debussy's handoff prompt.
//!
//! Anything non-streaming, or streaming without tools, is a side request and gets the
//! scenario's canned text. Scripts advance per conversation, so a side request or a
//! subagent never consumes a main-thread turn.

use serde_json::{Value, json};

use super::record::{RecordedRequest, RequestKind};
use super::scenario::{Scenario, Turn, Usage};

/// Marker Claude Code puts in a subagent's system prompt.
const SUBAGENT_MARKER: &str = "cc_is_subagent=true";

/// Phrase of Claude Code's compaction prompt.
const COMPACT_MARKER: &str = "create a detailed summary of the conversation";

/// Phrase of the Codex CLI's compaction prompt.
const CODEX_COMPACT_MARKER: &str = "CONTEXT CHECKPOINT COMPACTION";

/// How debussy's handoff prompt begins (`orchestrator::prompts::HANDOFF_OPENING`).
const HANDOFF_MARKER: &str = "debussy is stopping this session now";

/// Which API a turn is answered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    /// The Anthropic Messages API (Claude Code).
    Messages,
    /// The OpenAI Responses API (the Codex CLI).
    Responses,
    /// The Gemini API (the Gemini CLI).
    Gemini,
}

/// What the server sends back.
#[derive(Debug)]
pub(super) enum Answer {
    /// Play a turn: an SSE stream when the request asked for one, else one message.
    Turn {
        /// The turn to play.
        turn: Turn,
        /// Whether the request asked for `stream: true`.
        streaming: bool,
        /// The API to answer in.
        wire: Wire,
    },
    /// A fixed JSON body.
    Json {
        /// HTTP status.
        status: u16,
        /// Body.
        body: Value,
    },
    /// An empty 200 response.
    Empty,
}

/// The classification of one request and its answer.
#[derive(Debug)]
pub(super) struct Decision {
    pub(super) kind: RequestKind,
    pub(super) scripted: bool,
    pub(super) answer: Answer,
}

/// The scenario plus how far each conversation has got.
#[derive(Debug)]
pub(super) struct Router {
    scenario: Scenario,
    main_next: usize,
    subagent_next: Vec<usize>,
    unmatched_subagent_next: usize,
}

/// Takes the next turn of a script. Error turns do not advance (they are sticky);
/// past the end, the fallback answers and the request counts as unscripted.
fn take(turns: &[Turn], next: &mut usize, fallback: &Turn) -> (Turn, usize, bool) {
    let index = *next;
    match turns.get(index) {
        Some(turn) => {
            if !turn.is_error() {
                *next += 1;
            }
            (turn.clone(), index, true)
        }
        None => {
            *next += 1;
            (fallback.clone(), index, false)
        }
    }
}

fn json_error(status: u16, error_type: &str, message: &str) -> Answer {
    Answer::Json {
        status,
        body: json!({"type": "error", "error": {"type": error_type, "message": message}}),
    }
}

impl Router {
    /// The refusal `request` gets `elapsed` after the server started, if it is a model
    /// request and the scenario still refuses: the wire to answer in, the refusal and the
    /// time left of it.
    pub(super) fn refusing(
        &self,
        request: &RecordedRequest,
        elapsed: std::time::Duration,
    ) -> Option<(Wire, super::refusal::Refusing, Option<std::time::Duration>)> {
        let refusing = self.scenario.refusing?;
        let left = match refusing.until {
            Some(until) if until <= elapsed => return None,
            Some(until) => Some(until - elapsed),
            None => None,
        };
        let wire = match (request.method.as_str(), request.path.as_str()) {
            ("POST", "/v1/messages") => Wire::Messages,
            ("POST", "/v1/responses") => Wire::Responses,
            ("POST", path)
                if path.starts_with("/v1beta/models/") && !path.ends_with(":countTokens") =>
            {
                Wire::Gemini
            }
            _ => return None,
        };
        Some((wire, refusing, left))
    }

    pub(super) fn new(scenario: Scenario) -> Self {
        let subagents = scenario.subagents.len();
        Self {
            scenario,
            main_next: 0,
            subagent_next: vec![0; subagents],
            unmatched_subagent_next: 0,
        }
    }

    /// Classifies `request` and picks its answer, advancing the matching script.
    pub(super) fn route(&mut self, request: &RecordedRequest) -> Decision {
        match (request.method.as_str(), request.path.as_str()) {
            ("HEAD" | "GET", "/api/hello") => Decision {
                kind: RequestKind::Hello,
                scripted: true,
                answer: Answer::Empty,
            },
            ("POST", "/v1/messages/count_tokens") => {
                let estimate =
                    u64::try_from(request.body.to_string().len() / 4).unwrap_or(u64::MAX);
                Decision {
                    kind: RequestKind::CountTokens,
                    scripted: true,
                    answer: Answer::Json {
                        status: 200,
                        body: json!({"input_tokens": self.scenario.count_tokens.unwrap_or(estimate)}),
                    },
                }
            }
            ("POST", "/v1/messages") => self.route_message(request),
            ("POST", "/v1/responses") => self.route_response(request),
            ("POST", path) if path.starts_with("/v1beta/models/") => self.route_gemini(request),
            _ => Decision {
                kind: RequestKind::Unknown,
                scripted: false,
                answer: json_error(
                    404,
                    "not_found_error",
                    &format!(
                        "the scripted model server has no route {} {}",
                        request.method, request.path
                    ),
                ),
            },
        }
    }

    fn route_message(&mut self, request: &RecordedRequest) -> Decision {
        if !request.body.is_object() {
            return Decision {
                kind: RequestKind::Unknown,
                scripted: false,
                answer: json_error(
                    400,
                    "invalid_request_error",
                    "request body is not a JSON object",
                ),
            };
        }
        let streaming = request.is_streaming();
        if request.last_user_text().contains(COMPACT_MARKER) {
            let summary = format!(
                "<analysis>\nScripted analysis.\n</analysis>\n\n<summary>\n{}\n</summary>",
                self.scenario.compact_summary
            );
            return Decision {
                kind: RequestKind::Compact,
                scripted: true,
                answer: Answer::Turn {
                    turn: Turn::reply(summary).usage(Usage::new(2_000, 0, 0, 400)),
                    streaming,
                    wire: Wire::Messages,
                },
            };
        }
        if request.last_user_text().contains(HANDOFF_MARKER) {
            return Decision {
                kind: RequestKind::Handoff,
                scripted: true,
                answer: Answer::Turn {
                    turn: self.scenario.handoff.clone(),
                    streaming,
                    wire: Wire::Messages,
                },
            };
        }
        if !streaming {
            return self.side(streaming);
        }
        let first_user = request.first_user_text();
        let matched = self
            .scenario
            .subagents
            .iter()
            .position(|script| first_user.contains(&script.prompt_contains));
        if matched.is_some() || request.system_text().contains(SUBAGENT_MARKER) {
            let (turn, index, scripted, key) = match matched {
                Some(which) => {
                    let script = &self.scenario.subagents[which];
                    let (turn, index, scripted) = take(
                        &script.turns,
                        &mut self.subagent_next[which],
                        &self.scenario.when_exhausted,
                    );
                    (turn, index, scripted, Some(script.prompt_contains.clone()))
                }
                None => {
                    let (turn, index, _) = take(
                        &[],
                        &mut self.unmatched_subagent_next,
                        &self.scenario.when_exhausted,
                    );
                    (turn, index, false, None)
                }
            };
            return Decision {
                kind: RequestKind::Subagent { key, turn: index },
                scripted,
                answer: Answer::Turn {
                    turn,
                    streaming,
                    wire: Wire::Messages,
                },
            };
        }
        if request.tool_names().is_empty() {
            return self.side(streaming);
        }
        let (turn, index, scripted) = take(
            &self.scenario.main,
            &mut self.main_next,
            &self.scenario.when_exhausted,
        );
        Decision {
            kind: RequestKind::Main { turn: index },
            scripted,
            answer: Answer::Turn {
                turn,
                streaming,
                wire: Wire::Messages,
            },
        }
    }

    /// A Codex request: compaction when it asks for a summary, a side request without
    /// tools, else the next main-conversation turn.
    fn route_response(&mut self, request: &RecordedRequest) -> Decision {
        let (kind, turn, scripted) = if request.last_user_text().contains(CODEX_COMPACT_MARKER) {
            let turn = Turn::reply(self.scenario.compact_summary.clone())
                .usage(Usage::new(2_000, 0, 0, 400));
            (RequestKind::Compact, turn, true)
        } else if request.tool_names().is_empty() {
            let turn = Turn::reply(self.scenario.side_reply.clone());
            (RequestKind::Side, turn, true)
        } else {
            let (turn, index, scripted) = take(
                &self.scenario.main,
                &mut self.main_next,
                &self.scenario.when_exhausted,
            );
            (RequestKind::Main { turn: index }, turn, scripted)
        };
        Decision {
            kind,
            scripted,
            answer: Answer::Turn {
                turn,
                streaming: true,
                wire: Wire::Responses,
            },
        }
    }

    /// A Gemini CLI request: `countTokens` is answered with the scenario's figure, a
    /// request without tools is a side request, anything else the next main turn.
    fn route_gemini(&mut self, request: &RecordedRequest) -> Decision {
        if request.path.ends_with(":countTokens") {
            let estimate = u64::try_from(request.body.to_string().len() / 4).unwrap_or(u64::MAX);
            return Decision {
                kind: RequestKind::CountTokens,
                scripted: true,
                answer: Answer::Json {
                    status: 200,
                    body: json!({"totalTokens": self.scenario.count_tokens.unwrap_or(estimate)}),
                },
            };
        }
        let streaming = request.path.ends_with(":streamGenerateContent");
        let offers_tools = request
            .body
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|tools| !tools.is_empty());
        let (kind, turn, scripted) = if offers_tools {
            let (turn, index, scripted) = take(
                &self.scenario.main,
                &mut self.main_next,
                &self.scenario.when_exhausted,
            );
            (RequestKind::Main { turn: index }, turn, scripted)
        } else {
            let turn = Turn::reply(self.scenario.side_reply.clone());
            (RequestKind::Side, turn, true)
        };
        Decision {
            kind,
            scripted,
            answer: Answer::Turn {
                turn,
                streaming,
                wire: Wire::Gemini,
            },
        }
    }

    fn side(&self, streaming: bool) -> Decision {
        Decision {
            kind: RequestKind::Side,
            scripted: true,
            answer: Answer::Turn {
                turn: Turn::reply(self.scenario.side_reply.clone()),
                streaming,
                wire: Wire::Messages,
            },
        }
    }
}
