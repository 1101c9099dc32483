//! `debussy mcp supervise` (a stdio MCP server behind the restart-proof proxy) and
//! `debussy mcp bridge` (a stdio client in front of a streamable-HTTP daemon).
//!
//! Each turns its flags and the `mcp` configuration section into options and runs on a
//! runtime of its own: a single-threaded one, where the dispatcher, the readers and the
//! writers hand messages to each other without crossing threads (the added latency is
//! mostly thread wake-ups otherwise).

use crate::error_chain::error_chain;
use std::time::Duration;

use crate::cli::{BridgeArgs, GlobalArgs, SuperviseArgs};
use crate::exit::{CommandResult, Exit, Failure};
use crate::mcp::{BridgeOptions, McpError, StateDirError, SuperviseOptions, default_name};

/// The lean binary for the long-lived MCP commands, installed beside `debussy`.
const LEAN_MCP_BINARY: &str = "debussy-mcp";

/// Replace this process with `debussy-mcp` (found beside the running executable) and the
/// same arguments. A supervisor or bridge runs for as long as its MCP client, one per
/// client and server, so it should not keep the run loop, the HUD, git and SQLite
/// resident. Returns only when there is no such binary or it cannot be run; the command
/// then runs in this process.
pub fn exec_lean_mcp() {
    use std::os::unix::process::CommandExt;
    let Ok(me) = std::env::current_exe() else {
        return;
    };
    let lean = me.with_file_name(LEAN_MCP_BINARY);
    if me.file_name() == lean.file_name() || !lean.is_file() {
        return;
    }
    let err = std::process::Command::new(&lean)
        .args(std::env::args_os().skip(1))
        .exec();
    tracing::debug!("cannot run {}: {err}; running here", lean.display());
}

pub(super) async fn supervise(global: &GlobalArgs, args: SuperviseArgs) -> CommandResult {
    let loaded = super::load_config(global, None)?;
    let name = args.name.unwrap_or_else(|| default_name(&args.command));
    check_name(&name)?;
    let mut opts = SuperviseOptions::new(name.clone(), args.command);
    opts.state_dir = args
        .state_dir
        .unwrap_or_else(|| default_state_dir(&loaded.project_root, &name));
    opts.inject_tools = !args.no_inject_tools;
    opts.watch = args.watch;
    opts.build = args.build;
    opts.debounce = Duration::from_millis(args.debounce);
    opts.apply_config(&loaded.config.mcp)
        .map_err(|err| Failure::usage(miette::miette!("{err}")))?;
    for path in &opts.watch {
        if !path.exists() {
            return Err(Failure::usage(miette::miette!(
                help = "create it first, or fix the path",
                "`--watch {}`: no such file or directory",
                path.display()
            )));
        }
    }

    run_on_own_thread("mcp-supervisor", move || crate::mcp::supervise_stdio(opts)).await
}

/// `debussy mcp bridge`.
pub(super) async fn bridge(global: &GlobalArgs, args: BridgeArgs) -> CommandResult {
    let loaded = super::load_config(global, None)?;
    // The port counts in the hash (not the words): one state directory per daemon address.
    let name = args.name.unwrap_or_else(|| {
        let mut key = args.command.clone();
        key.push(format!("--bridge-port={}", args.port));
        default_name(&key)
    });
    check_name(&name)?;
    if !args.path.starts_with('/') {
        return Err(Failure::usage(miette::miette!(
            help = "write it from the root, e.g. `--path /mcp`",
            "`--path {}` must start with `/`",
            args.path
        )));
    }
    let mut opts = BridgeOptions::new(name.clone(), args.command, args.port);
    opts.state_dir = args
        .state_dir
        .unwrap_or_else(|| default_state_dir(&loaded.project_root, &name));
    opts.host = args.host;
    opts.path = args.path;
    opts.health = args.health;
    opts.shutdown_path = args.shutdown_path;
    opts.ready_timeout = args.ready_timeout;
    opts.stop_daemon_on_exit = args.stop_daemon_on_exit;
    opts.inject_tools = !args.no_inject_tools;
    let mut supervise_view = SuperviseOptions::new(name, Vec::new());
    supervise_view
        .apply_config(&loaded.config.mcp)
        .map_err(|err| Failure::usage(miette::miette!("{err}")))?;
    opts.limits = supervise_view.limits;
    opts.restart = supervise_view.restart;
    run_on_own_thread("mcp-bridge", move || async move {
        crate::mcp::bridge_stdio(opts).await.map(|_| ())
    })
    .await
}

fn check_name(name: &str) -> Result<(), Failure> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(Failure::usage(miette::miette!(
            help = "use letters, digits, `-`, `_` or `.`",
            "`--name {name}` cannot be used as a directory name"
        )));
    }
    Ok(())
}

/// `.debussy/mcp/<name>/` under the project, with `.debussy/mcp/` kept out of git.
fn default_state_dir(project_root: &std::path::Path, name: &str) -> std::path::PathBuf {
    let mcp_dir = project_root.join(".debussy").join("mcp");
    if let Err(err) = crate::mcp::ignore_in_git(&mcp_dir) {
        crate::mcp::say(&format!(
            "cannot write {}/.gitignore: {err}",
            mcp_dir.display()
        ));
    }
    mcp_dir.join(name)
}

/// Run `job` on a single-threaded runtime on a thread of its own and map its error.
async fn run_on_own_thread<F, Fut, T>(thread_name: &str, job: F) -> CommandResult
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<T, McpError>> + Send + 'static,
    T: Send + 'static,
{
    let thread = std::thread::Builder::new()
        .name(thread_name.to_owned())
        .spawn(move || -> Result<(), McpError> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(McpError::Runtime)?;
            // The job runs as a task, not as the future `block_on` polls: a task woken
            // by another task runs in the same scheduler tick, while waking the
            // `block_on` future costs the runtime an extra turn of its I/O driver
            // (an `epoll_wait` per message on the proxy's hot path).
            let result = runtime
                .block_on(async { tokio::spawn(job()).await })
                .unwrap_or_else(|err| std::panic::resume_unwind(err.into_panic()));
            // A read of stdin may still be pending on a blocking thread (when stdin is a
            // terminal); do not wait for it.
            runtime.shutdown_background();
            result.map(|_| ())
        })
        .map_err(|err| {
            Failure::failed(miette::miette!("cannot start the supervisor thread: {err}"))
        })?;
    let joined = tokio::task::spawn_blocking(move || thread.join())
        .await
        .map_err(|err| Failure::failed(miette::miette!("the supervisor thread failed: {err}")))?;
    match joined {
        Ok(Ok(())) => Ok(Exit::Success),
        Ok(Err(err)) if err.is_out_of_space() => Err(Failure::failed(miette::miette!(
            help = "free space on the disk that holds it (`df -h` says how much is left), then start the supervisor again",
            "failed to {}",
            error_chain(&err)
        ))),
        Ok(Err(err @ McpError::StateDirTaken(StateDirError::InUse { .. }))) => {
            Err(Failure::usage(miette::miette!(
                help = "give each supervisor a state directory of its own: pass `--name NAME` (or `--state-dir DIR`)",
                "failed to {}",
                error_chain(&err)
            )))
        }
        Ok(Err(err @ (McpError::StateDir { .. } | McpError::StateDirTaken(_)))) => {
            Err(Failure::usage(miette::miette!(
                help = "make that directory writable by your user (look for a file in the way, the owner and mode, a read-only mount), or pass `--state-dir DIR` with one that is",
                "failed to {}",
                error_chain(&err)
            )))
        }
        Ok(Err(err @ McpError::Watch(_))) => Err(Failure::usage(miette::miette!(
            "failed to {}",
            error_chain(&err)
        ))),
        Ok(Err(err)) => Err(Failure::failed(miette::miette!(
            "failed to {}",
            error_chain(&err)
        ))),
        Err(_) => Err(Failure::failed(miette::miette!(
            "the supervisor thread panicked"
        ))),
    }
}
