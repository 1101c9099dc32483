//! `debussy mcp supervise`: run a stdio MCP server behind the restart-proof proxy.
//!
//! Turns the flags and the `mcp` configuration section into [`SuperviseOptions`] and runs
//! the supervisor on a runtime of its own: a single-threaded one, where the dispatcher,
//! the readers and the writers hand messages to each other without crossing threads
//! (the proxy's added latency is mostly thread wake-ups otherwise).

use crate::error_chain::error_chain;
use std::time::Duration;

use crate::cli::{GlobalArgs, SuperviseArgs};
use crate::exit::{CommandResult, Exit, Failure};
use crate::mcp::{McpError, StateDirError, SuperviseOptions, default_name};

pub(super) async fn supervise(global: &GlobalArgs, args: SuperviseArgs) -> CommandResult {
    let loaded = super::load_config(global, None)?;
    let name = args.name.unwrap_or_else(|| default_name(&args.command));
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(Failure::usage(miette::miette!(
            help = "use letters, digits, `-`, `_` or `.`",
            "`--name {name}` cannot be used as a directory name"
        )));
    }
    let mut opts = SuperviseOptions::new(name.clone(), args.command);
    opts.state_dir = match args.state_dir {
        Some(dir) => dir,
        None => {
            let mcp_dir = loaded.project_root.join(".debussy").join("mcp");
            if let Err(err) = crate::mcp::ignore_in_git(&mcp_dir) {
                crate::mcp::say(&format!(
                    "cannot write {}/.gitignore: {err}",
                    mcp_dir.display()
                ));
            }
            mcp_dir.join(&name)
        }
    };
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

    let thread = std::thread::Builder::new()
        .name("mcp-supervisor".to_owned())
        .spawn(move || -> Result<(), McpError> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(McpError::Runtime)?;
            let result = runtime.block_on(crate::mcp::supervise_stdio(opts));
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
        Ok(Err(err @ McpError::StateDirTaken(StateDirError::InUse { .. }))) => {
            Err(Failure::usage(miette::miette!(
                help = "give each supervisor a state directory of its own: pass `--name NAME` (or `--state-dir DIR`)",
                "failed to {}",
                error_chain(&err)
            )))
        }
        Ok(Err(
            err @ (McpError::StateDir { .. } | McpError::StateDirTaken(_) | McpError::Watch(_)),
        )) => Err(Failure::usage(miette::miette!(
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
