//! Starting a bridge: [`bridge`] opens the state directory and audit log, and runs the
//! front with the streamable-HTTP back end until the client goes away.

use serde_json::json;

use super::backend::http::{Daemon, Endpoint, HttpBackend, HttpSettings};
use super::front::settings::Settings;
use super::front::{self, ClientInput, ClientOutput, Shutdown};
use super::{AuditLog, BridgeOptions, McpError, say, signals, stdio};

/// How a bridge ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeOutcome {
    /// Why it ended.
    pub reason: String,
}

/// Run the bridge with the process's own stdin and stdout as the client side, ending on
/// SIGINT or SIGTERM and restarting the daemon on SIGHUP.
///
/// # Errors
/// The state directory or the audit log cannot be created.
pub async fn bridge_stdio(opts: BridgeOptions) -> Result<BridgeOutcome, McpError> {
    bridge(
        opts,
        stdio::input(),
        stdio::output(),
        signals::forward_in_background,
    )
    .await
}

/// Run the bridge between `input`/`output` (the client side) and the daemon, until the
/// client closes `input` or a shutdown is requested through the handle given to
/// `on_start`.
///
/// # Errors
/// The state directory or the audit log cannot be created, or the HTTP client cannot be
/// built.
pub async fn bridge(
    opts: BridgeOptions,
    input: impl ClientInput,
    output: impl ClientOutput,
    on_start: impl FnOnce(Shutdown),
) -> Result<BridgeOutcome, McpError> {
    let state_error = |source| McpError::StateDir {
        path: opts.state_dir.clone(),
        source,
    };
    std::fs::create_dir_all(&opts.state_dir).map_err(state_error)?;
    let mut audit = AuditLog::open(&opts.state_dir).map_err(state_error)?;
    let endpoint = Endpoint::new(
        &opts.host,
        opts.port,
        &opts.path,
        opts.limits.max_line_length,
    )
    .map_err(McpError::HttpClient)?;
    let _ = audit.record_started(json!({
        "name": opts.name,
        "command": opts.command,
        "url": endpoint.url(),
        "bridge_pid": std::process::id(),
        "inject_tools": opts.inject_tools,
    }));
    say(&format!(
        "bridging to {} (daemon `{}`, state in {})",
        endpoint.url(),
        opts.command.join(" "),
        opts.state_dir.display()
    ));
    let backend = HttpBackend::new(HttpSettings {
        daemon: Daemon {
            command: opts.command.clone(),
            state_dir: opts.state_dir.clone(),
            port: opts.port,
            endpoint,
            health: opts.health,
            shutdown_path: opts.shutdown_path,
            ready_timeout: opts.ready_timeout,
            term_grace: opts.limits.stop_term_grace,
        },
        stop_on_exit: opts.stop_daemon_on_exit,
    });
    let settings = Settings {
        name: opts.name,
        role: "bridge",
        command: opts.command,
        state_dir: opts.state_dir,
        inject_tools: opts.inject_tools,
        watch: Vec::new(),
        build: None,
        debounce: std::time::Duration::ZERO,
        limits: opts.limits,
        restart: opts.restart,
        remember: true,
    };
    let outcome = front::serve(settings, backend, audit, input, output, on_start).await?;
    Ok(BridgeOutcome {
        reason: outcome.describe(),
    })
}
