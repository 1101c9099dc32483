//! A stdio MCP server built with `rmcp`, used by debussy's tests of `debussy mcp supervise`
//! and handy for trying the supervisor by hand:
//!
//! ```sh
//! cargo build --example mcp_test_server
//! debussy mcp supervise -- target/debug/examples/mcp_test_server
//! ```
//!
//! Tools: `echo(text)`, `whoami()` (pid, generation, start count), `slow(ms)` (says so on
//! stderr when it starts), `exit_42()`
//! (replies, then exits with code 42), `crash()` (aborts without replying),
//! `big_output(bytes)` and `list_roots()` (asks the client for its roots).
//!
//! Flags for misbehaving on purpose:
//! - `--garbage`: print lines that are not JSON-RPC on stdout at startup (a log line and a
//!   JSON object of the wrong shape), as careless servers do.
//! - `--no-initialize`: read stdin but never answer anything, `initialize` included.
//! - `--ignore-sigterm`: ignore SIGTERM and keep running after stdin closes, so only
//!   SIGKILL ends it.
//! - `--exit-at-start CODE`: exit with CODE at once (a server that cannot start).
//! - `--counter-file PATH`: count starts in PATH; `whoami` reports the count.
//! - `--prompts-from-generation N`: also declare the prompts capability from supervisor
//!   generation N on (a server whose capabilities change across a restart).
//! - `--grow`: the tool `added_later()` exists from generation 2 on (a server whose tool
//!   list changes across a restart).
//! - `--legacy-only`: speak only the protocol revisions up to 2025-11-25: `server/discover`
//!   is "Method not found", so a 2026-07-28 client falls back to `initialize`.
//! - `--legacy-before-generation N` / `--legacy-from-generation N`: the same, only before
//!   (or from) supervisor generation N on (a restart that changes the server's revision).
//!
//! Without `--legacy-only` the server speaks MCP 2026-07-28 too (rmcp 3.11): it answers
//! `server/discover` and holds `subscriptions/listen` streams open until cancelled.
//!
//! - `--http PORT`: serve MCP over streamable HTTP at `http://127.0.0.1:PORT/mcp` (with
//!   `GET /health` answering `ok` and `POST /shutdown` exiting), as a daemon behind
//!   `debussy mcp bridge`, instead of over stdio.
//!
//! The generation comes from `DEBUSSY_MCP_GENERATION`, which the supervisor and the
//! bridge set.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;

#[derive(Debug, Clone)]
struct TestServer {
    starts: u64,
    prompts: bool,
    legacy_only: bool,
    tool_router: ToolRouter<Self>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// Text to send back.
    text: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SlowArgs {
    /// Milliseconds to wait before answering.
    ms: u64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct BigArgs {
    /// Approximate size of the reply text in bytes.
    bytes: usize,
}

#[tool_router]
impl TestServer {
    #[tool(description = "Return the text unchanged")]
    async fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Report this server process's pid, generation and start count")]
    async fn whoami(&self) -> String {
        let generation = std::env::var("DEBUSSY_MCP_GENERATION")
            .ok()
            .and_then(|g| g.parse::<u64>().ok());
        serde_json::json!({
            "pid": std::process::id(),
            "generation": generation,
            "starts": self.starts,
        })
        .to_string()
    }

    #[tool(description = "Wait ms milliseconds, then answer")]
    async fn slow(&self, Parameters(SlowArgs { ms }): Parameters<SlowArgs>) -> String {
        eprintln!("mcp_test_server: slow: sleeping {ms} ms");
        tokio::time::sleep(Duration::from_millis(ms)).await;
        format!("slept {ms} ms")
    }

    #[tool(description = "Answer, then exit with code 42 (asks the supervisor for a restart)")]
    // The answer goes out over HTTP too: exiting at once could cut its POST short.
    async fn exit_42(&self) -> String {
        tokio::spawn(async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            std::process::exit(42);
        });
        "exiting with code 42".to_owned()
    }

    #[tool(description = "Abort at once, without answering")]
    async fn crash(&self) -> String {
        std::process::abort();
    }

    #[tool(description = "Ask the client for its roots (a request from the server to the client)")]
    #[expect(
        deprecated,
        reason = "roots are still what clients such as Claude Code answer; any server-to-client request would do"
    )]
    async fn list_roots(&self, peer: rmcp::Peer<rmcp::RoleServer>) -> String {
        match peer.list_roots().await {
            Ok(result) => serde_json::json!({
                "roots": result.roots.len(),
                "first": result.roots.first().map(|root| root.uri.clone()),
            })
            .to_string(),
            Err(err) => format!("error: {err}"),
        }
    }

    #[tool(description = "A tool only servers after the first have (with --grow)")]
    async fn added_later(&self) -> String {
        "new".to_owned()
    }

    #[tool(description = "Return about `bytes` bytes of multi-byte text")]
    async fn big_output(&self, Parameters(BigArgs { bytes }): Parameters<BigArgs>) -> String {
        // "é→世" is 2 + 3 + 3 bytes: splits across reads land inside characters.
        let unit = "é→世";
        unit.repeat(bytes / unit.len() + 1)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = if self.prompts {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .build()
        } else {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build()
        };
        ServerConfig::new(capabilities)
    }

    async fn discover(
        &self,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::DiscoverResult, rmcp::ErrorData> {
        let _ = context;
        if self.legacy_only {
            return Err(rmcp::ErrorData::method_not_found::<
                rmcp::model::DiscoverRequestMethod,
            >());
        }
        Ok(rmcp::model::DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(requested.clone())
    }
}

struct Flags {
    garbage: bool,
    no_initialize: bool,
    ignore_sigterm: bool,
    exit_at_start: Option<i32>,
    counter_file: Option<PathBuf>,
    prompts_from_generation: Option<u64>,
    http: Option<u16>,
    grow: bool,
    legacy_only: bool,
}

fn parse_flags() -> Result<Flags, String> {
    let mut flags = Flags {
        garbage: false,
        no_initialize: false,
        ignore_sigterm: false,
        exit_at_start: None,
        counter_file: None,
        prompts_from_generation: None,
        http: None,
        grow: false,
        legacy_only: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--garbage" => flags.garbage = true,
            "--no-initialize" => flags.no_initialize = true,
            "--ignore-sigterm" => flags.ignore_sigterm = true,
            "--grow" => flags.grow = true,
            "--legacy-only" => flags.legacy_only = true,
            "--legacy-before-generation" | "--legacy-from-generation" => {
                let generation: u64 = args
                    .next()
                    .ok_or(format!("{arg} needs a number"))?
                    .parse()
                    .map_err(|e| format!("{arg}: {e}"))?;
                let current = std::env::var("DEBUSSY_MCP_GENERATION")
                    .ok()
                    .and_then(|g| g.parse::<u64>().ok())
                    .unwrap_or(1);
                flags.legacy_only |= if arg == "--legacy-before-generation" {
                    current < generation
                } else {
                    current >= generation
                };
            }
            "--exit-at-start" => {
                let code = args.next().ok_or("--exit-at-start needs a code")?;
                flags.exit_at_start = Some(code.parse().map_err(|e| format!("{code}: {e}"))?);
            }
            "--prompts-from-generation" => {
                let generation = args
                    .next()
                    .ok_or("--prompts-from-generation needs a number")?;
                flags.prompts_from_generation = Some(
                    generation
                        .parse()
                        .map_err(|e| format!("{generation}: {e}"))?,
                );
            }
            "--http" => {
                let port = args.next().ok_or("--http needs a port")?;
                flags.http = Some(port.parse().map_err(|e| format!("{port}: {e}"))?);
            }
            "--counter-file" => {
                flags.counter_file = Some(args.next().ok_or("--counter-file needs a path")?.into());
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(flags)
}

fn bump_counter(path: &Path) -> u64 {
    let count = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .unwrap_or(0)
        + 1;
    let _ = std::fs::write(path, count.to_string());
    count
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let flags = match parse_flags() {
        Ok(flags) => flags,
        Err(err) => {
            eprintln!("mcp_test_server: {err}");
            std::process::exit(2);
        }
    };
    let starts = flags.counter_file.as_deref().map_or(1, bump_counter);
    if let Some(code) = flags.exit_at_start {
        eprintln!("mcp_test_server: exiting at start with code {code}");
        std::process::exit(code);
    }
    if flags.ignore_sigterm {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .unwrap_or_else(|err| panic!("cannot listen for SIGTERM: {err}"));
        tokio::spawn(async move {
            while term.recv().await.is_some() {
                eprintln!("mcp_test_server: ignoring SIGTERM");
            }
        });
    }
    if flags.garbage {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "mcp_test_server starting up (this line is not JSON-RPC)"
        );
        let _ = writeln!(out, "{{\"hello\": \"a JSON object that is not JSON-RPC\"}}");
        let _ = out.flush();
    }
    if flags.no_initialize {
        let mut sink = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut tokio::io::stdin(), &mut sink).await;
    } else {
        let generation = std::env::var("DEBUSSY_MCP_GENERATION")
            .ok()
            .and_then(|g| g.parse::<u64>().ok());
        let mut tool_router = TestServer::tool_router();
        if !flags.grow || generation.is_none_or(|g| g < 2) {
            tool_router.remove_route("added_later");
        }
        let server = TestServer {
            starts,
            prompts: flags
                .prompts_from_generation
                .is_some_and(|from| generation.is_some_and(|g| g >= from)),
            legacy_only: flags.legacy_only,
            tool_router,
        };
        if let Some(port) = flags.http {
            if let Err(err) = serve_http(server, port).await {
                eprintln!("mcp_test_server: {err}");
                std::process::exit(1);
            }
            return;
        }
        match server.serve(rmcp::transport::stdio()).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(err) => eprintln!("mcp_test_server: {err}"),
        }
    }
    if flags.ignore_sigterm {
        // Outlive stdin and SIGTERM: only SIGKILL ends this process.
        std::future::pending::<()>().await;
    }
}

/// Serve `server` over streamable HTTP on `127.0.0.1:port` until killed or asked to shut
/// down through `POST /shutdown`.
async fn serve_http(server: TestServer, port: u16) -> std::io::Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .route("/health", axum::routing::get(|| async { "ok" }))
        .route(
            "/shutdown",
            axum::routing::post(|| async {
                tokio::spawn(async {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    std::process::exit(0);
                });
                "bye"
            }),
        );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!(
        "mcp_test_server: listening on http://127.0.0.1:{port}/mcp (pid {})",
        std::process::id()
    );
    axum::serve(listener, router).await
}
