//! The Codex CLI (an rmcp client) and the Gemini CLI (the TypeScript MCP SDK) as MCP
//! clients of `debussy mcp supervise`, each run headless against the scripted model: the
//! agent restarts the supervised Python SDK server `t` through the injected
//! `restart_server`, then calls `added_later`, a tool only the restarted server has, in
//! the same session; both calls come back as results, not errors.
//!
//! The two CLIs name MCP tools differently. Codex 0.171 offers them to the model only
//! through its tool search, in the namespace `mcp__t` (a call names `restart_server` in
//! `mcp__t`; the scripted model writes `mcp__t__restart_server`), and it reads a server's
//! tools again on `notifications/tools/list_changed` only with
//! `features.mcp_tool_list_changed` (under development, off by default: without it the
//! new tool stays an "unsupported call" until Codex starts again). The Gemini CLI offers
//! them as `mcp_t_restart_server`, and declares a tool the restarted server added one
//! model request late: it sets its tools anew only after re-reading the list and its
//! memory files, by which time the request that carries the restart's answer has gone
//! out; the call itself finds the tool.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Command;

use crate::support::claude::{self as runner, Transcript};
use crate::support::model_server::{ModelServer, RecordedRequest, Scenario, Turn};
use crate::support::processes::{left_after, processes_in};
use crate::support::{codex, gemini};

/// How long one agent run may take: a few model turns, one restart of a Python server.
const RUN_TIMEOUT: Duration = Duration::from_mins(2);

/// The prompt; the scripted model does not read it.
const PROMPT: &str = "Restart the server t, then use its new tool.";

/// The id of the model's call of `restart_server`.
const RESTART_ID: &str = "call_restart";

/// The id of the model's call of `added_later`.
const ADDED_ID: &str = "call_added";

/// The model's call of `restart_server` on server `t`, named `name`.
fn restart_turn(name: &str) -> Turn {
    Turn::new().tool_use_id(
        RESTART_ID,
        name,
        json!({ "reason": "the agent added a tool" }),
    )
}

/// The model's call of `added_later` on server `t`, named `name`.
fn added_turn(name: &str) -> Turn {
    Turn::new().tool_use_id(ADDED_ID, name, json!({}))
}

/// The agent's MCP server `t`: the program and arguments of
/// `debussy --config … mcp supervise --state-dir STATE/s -- PYTHON server.py --grow`.
/// Python takes seconds to import the SDK on a loaded machine, more than the default
/// restart readiness timeout, so the configuration raises it.
fn server_t(state: &Path) -> (String, Vec<String>) {
    let config = state.join("config.yaml");
    std::fs::write(&config, "mcp:\n  readiness_timeout: 60\n").expect("config");
    let script = crate::mcp::support::root().join("tests/it/mcp/python/server.py");
    let path = |path: &Path| path.display().to_string();
    let args = vec![
        "--config".to_owned(),
        path(&config),
        "mcp".to_owned(),
        "supervise".to_owned(),
        "--state-dir".to_owned(),
        path(&state.join("s")),
        "--".to_owned(),
        path(&crate::mcp::python()),
        path(&script),
        "--grow".to_owned(),
    ];
    (crate::support::DEBUSSY.to_owned(), args)
}

/// The sandbox's HOME, from the environment it gives the agent.
fn home(envs: &[(String, String)]) -> PathBuf {
    envs.iter()
        .find(|(key, _)| key == "HOME")
        .map(|(_, home)| PathBuf::from(home))
        .expect("the sandbox sets HOME")
}

/// Run `program ARGS` in `cwd` with only `envs`, in its own process group, [`PROMPT`] on
/// stdin, to its end: what it printed. The group is killed when the run ends or times
/// out; anything still working in the sandbox (`cwd`'s parent) afterwards, such as the
/// supervisor or its server, is killed and fails the test.
async fn run_agent(
    program: &Path,
    args: &[&str],
    cwd: &Path,
    envs: Vec<(String, String)>,
) -> Transcript {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(envs)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let transcript = runner::run(command, PROMPT, RUN_TIMEOUT).await;
    let sandbox = cwd
        .parent()
        .expect("the sandbox holds the working directory");
    let left = left_after(Duration::from_secs(10), || processes_in(sandbox));
    for (pid, _) in &left {
        if let Ok(pid) = i32::try_from(*pid) {
            // ESRCH: it ended meanwhile; the assertion below names it all the same.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    assert!(left.is_empty(), "left behind: {left:#?}");
    transcript.unwrap_or_else(|error| panic!("{} did not finish: {error}", program.display()))
}

/// What a failed assertion shows: the agent's output, the supervisor's audit log
/// (under `state`) and the model requests.
fn context(transcript: &Transcript, state: &Path, server: &ModelServer) -> String {
    let audit = std::fs::read_to_string(state.join("s/audit.jsonl")).unwrap_or_default();
    let requests = Value::Array(
        server
            .main_requests()
            .iter()
            .map(|request| last_items(request, 2))
            .collect(),
    );
    format!(
        "status: {}\nstdout: {:#?}\nstderr: {}\naudit log:\n{audit}\nlast input items of each model request: {requests:#}",
        transcript.status, transcript.lines, transcript.stderr
    )
}

/// The last `count` items of a request's conversation (Codex's `input`, the Gemini
/// CLI's `contents`).
fn last_items(request: &RecordedRequest, count: usize) -> Value {
    let items = request.body["input"]
        .as_array()
        .or_else(|| request.body["contents"].as_array())
        .map_or(&[][..], Vec::as_slice);
    json!(items[items.len().saturating_sub(count)..])
}

/// The item of type `kind` with `call_id` `id` that Codex sent the model (the model
/// server's last request holds the whole conversation).
fn codex_item(server: &ModelServer, kind: &str, id: &str) -> Option<Value> {
    let requests = server.main_requests();
    requests.last()?.body["input"]
        .as_array()?
        .iter()
        .find(|item| item["type"] == kind && item["call_id"] == id)
        .cloned()
}

/// The text of a `function_call_output`'s output: a string, or content items.
fn output_text(output: &Value) -> String {
    match output {
        Value::String(text) => text.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|item| item["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Codex's `mcp_tool_call` item for the call of `tool` on server `t`, from its stdout
/// (`exec --json`).
fn codex_call(transcript: &Transcript, tool: &str) -> Option<Value> {
    transcript
        .json()
        .into_iter()
        .filter(|line| line["type"] == "item.completed")
        .map(|line| line["item"].clone())
        .find(|item| {
            item["type"] == "mcp_tool_call" && item["server"] == "t" && item["tool"] == tool
        })
}

#[tokio::test]
#[ignore = "needs the Python MCP SDK and the pinned Codex CLI (scripts/test-tools)"]
async fn codex_calls_a_tool_the_restarted_server_added_through_the_supervisor() {
    let cli = codex::require();
    let search = |id: &str, query: &str| {
        Turn::new().tool_use_id(id, "tool_search", json!({ "query": query, "limit": 8 }))
    };
    let server = ModelServer::start(
        Scenario::new()
            .turn(search("call_find", "restart_server"))
            .turn(restart_turn("mcp__t__restart_server"))
            .turn(search("call_find_new", "added_later"))
            .turn(added_turn("mcp__t__added_later"))
            .turn(Turn::reply("Done.")),
    )
    .expect("model server");
    let sandbox = codex::Sandbox::new(&server).expect("sandbox");
    let state = tempfile::tempdir().expect("tempdir");
    let (program, args) = server_t(state.path());
    let envs = sandbox.envs();
    // `required`: Codex waits for the server (an optional one gets 1 s, less than Python
    // takes) and fails if it cannot start. `approve`: under the approval policy `never`,
    // a tool Codex would ask about fails ("MCP tool call requires approval, but approval
    // policy is never"). `features.mcp_tool_list_changed`: see the module's docs.
    let config = home(&envs).join(".codex/config.toml");
    let mut toml = std::fs::read_to_string(&config).expect("codex config");
    toml.push_str(&format!(
        "\n[mcp_servers.t]\ncommand = {}\nargs = {}\nrequired = true\n\
         startup_timeout_sec = 60\ntool_timeout_sec = 90\n\
         default_tools_approval_mode = \"approve\"\n",
        json!(program),
        json!(args)
    ));
    std::fs::write(&config, toml).expect("codex config");
    let transcript = run_agent(
        cli.path(),
        &[
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-m",
            codex::DEFAULT_MODEL,
            "--sandbox",
            "workspace-write",
            "-c",
            "approval_policy=\"never\"",
            "-c",
            "features.mcp_tool_list_changed=true",
            "-c",
            "suppress_unstable_features_warning=true",
            "-",
        ],
        sandbox.cwd(),
        envs,
    )
    .await;
    let context = || context(&transcript, state.path(), &server);
    assert!(transcript.status.success(), "{}", context());
    // After the restart, Codex's tool search finds the tool only the new server has.
    let found = codex_item(&server, "tool_search_output", "call_find_new");
    let found = found.unwrap_or_else(|| panic!("no second search; {}", context()));
    assert!(
        found["tools"]
            .as_array()
            .is_some_and(|spaces| spaces.iter().any(|space| space["name"] == "mcp__t"
                && space["tools"]
                    .as_array()
                    .is_some_and(|tools| tools.iter().any(|tool| tool["name"] == "added_later")))),
        "the search after the restart did not find added_later: {found:#}\n{}",
        context()
    );
    let calls = [
        (RESTART_ID, "restart_server", "\"restarted\": true"),
        (ADDED_ID, "added_later", "new"),
    ];
    for (id, tool, wanted) in calls {
        let call = codex_call(&transcript, tool)
            .unwrap_or_else(|| panic!("no call of {tool}; {}", context()));
        assert_eq!(call["status"], "completed", "{call:#}\n{}", context());
        assert!(call["error"].is_null(), "{call:#}\n{}", context());
        let output = codex_item(&server, "function_call_output", id)
            .unwrap_or_else(|| panic!("no output of {id} went to the model; {}", context()));
        assert!(
            output_text(&output["output"]).contains(wanted),
            "{output:#}\n{}",
            context()
        );
    }
    server.assert_all_scripted();
}

/// The `functionResponse` the Gemini CLI sent the model for call `id` (the model
/// server's last request holds the whole conversation).
fn gemini_response(server: &ModelServer, id: &str) -> Option<Value> {
    let requests = server.main_requests();
    requests.last()?.body["contents"]
        .as_array()?
        .iter()
        .flat_map(|content| content["parts"].as_array().into_iter().flatten())
        .find(|part| part["functionResponse"]["id"] == id)
        .map(|part| part["functionResponse"].clone())
}

#[tokio::test]
#[ignore = "needs the Python MCP SDK and the pinned Gemini CLI (scripts/test-tools)"]
async fn gemini_calls_a_tool_the_restarted_server_added_through_the_supervisor() {
    let cli = gemini::require();
    let server = ModelServer::start(
        Scenario::new()
            .turn(restart_turn("mcp_t_restart_server"))
            .turn(added_turn("mcp_t_added_later"))
            .turn(Turn::reply("Done.")),
    )
    .expect("model server");
    let sandbox = gemini::Sandbox::new(&server).expect("sandbox");
    let state = tempfile::tempdir().expect("tempdir");
    let (program, args) = server_t(state.path());
    let envs = sandbox.envs();
    // In the user's settings; `--approval-mode yolo` runs its tools without asking.
    let settings = home(&envs).join(".gemini/settings.json");
    let mut body: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).expect("gemini settings"))
            .expect("gemini settings are JSON");
    body["mcpServers"] = json!({"t": {
        "command": program, "args": args, "timeout": 90_000,
    }});
    std::fs::write(&settings, body.to_string()).expect("gemini settings");
    let transcript = run_agent(
        cli.path(),
        &[
            "-p",
            "",
            "--output-format",
            "stream-json",
            "--skip-trust",
            "-m",
            gemini::DEFAULT_MODEL,
            "--approval-mode",
            "yolo",
        ],
        sandbox.cwd(),
        envs,
    )
    .await;
    let context = || context(&transcript, state.path(), &server);
    assert!(transcript.status.success(), "{}", context());
    let results: Vec<Value> = transcript
        .json()
        .into_iter()
        .filter(|line| line["type"] == "tool_result")
        .collect();
    for (id, wanted) in [(RESTART_ID, "\"restarted\": true"), (ADDED_ID, "new")] {
        let result = results
            .iter()
            .find(|line| line["tool_id"].as_str().is_some_and(|t| t.ends_with(id)))
            .unwrap_or_else(|| panic!("no tool_result for {id}; {}", context()));
        assert_eq!(result["status"], "success", "{result:#}\n{}", context());
        let response = gemini_response(&server, id)
            .unwrap_or_else(|| panic!("no response of {id} went to the model; {}", context()));
        assert!(
            response["response"]["error"].is_null(),
            "{response:#}\n{}",
            context()
        );
        let output = response["response"]["output"].as_str().unwrap_or_default();
        assert!(output.contains(wanted), "{response:#}\n{}", context());
    }
    server.assert_all_scripted();
}
