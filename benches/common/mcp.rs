//! What the MCP benchmarks share: a JSON-RPC client over a child's stdin and stdout, one
//! message a line as MCP's stdio transport carries it, and the answers of the minimal
//! server they measure against. Included by each with `#[path]`.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A child process spoken to in JSON-RPC over its stdin and stdout.
pub struct StdioPeer {
    pub child: Child,
    input: BufWriter<ChildStdin>,
    output: BufReader<ChildStdout>,
    last_id: u64,
    line: String,
}

impl StdioPeer {
    /// Start `command` with piped stdin and stdout, its stderr discarded.
    pub fn spawn(command: &mut Command) -> StdioPeer {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the stdio peer");
        let input = BufWriter::new(child.stdin.take().expect("stdin"));
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        StdioPeer {
            child,
            input,
            output,
            last_id: 0,
            line: String::new(),
        }
    }

    /// A request id not used before on this connection.
    pub fn next_id(&mut self) -> u64 {
        self.last_id += 1;
        self.last_id
    }

    /// Write `message` as one line, buffered until [`Self::flush`].
    pub fn write(&mut self, message: &Value) {
        serde_json::to_writer(&mut self.input, message).expect("write");
        self.input.write_all(b"\n").expect("write");
    }

    /// Write `line` (a whole line, newline included) as it is, buffered until
    /// [`Self::flush`].
    #[allow(dead_code, reason = "not every bench writes prepared lines")]
    pub fn write_raw(&mut self, line: &[u8]) {
        self.input.write_all(line).expect("write");
    }

    /// Send what is buffered.
    pub fn flush(&mut self) {
        self.input.flush().expect("flush");
    }

    /// The next message that carries an id (an answer); notifications are skipped.
    pub fn read(&mut self) -> Value {
        loop {
            self.line.clear();
            let n = self.output.read_line(&mut self.line).expect("read");
            assert!(n > 0, "the peer closed its output");
            let value: Value = serde_json::from_str(&self.line).expect("json");
            if value.get("id").is_some() {
                return value;
            }
        }
    }

    /// [`Self::read`], with the time from `started` to the answer's line read, before
    /// it is parsed.
    #[allow(dead_code, reason = "not every bench times its answers")]
    pub fn read_timed(&mut self, started: Instant) -> (Duration, Value) {
        loop {
            self.line.clear();
            let n = self.output.read_line(&mut self.line).expect("read");
            let elapsed = started.elapsed();
            assert!(n > 0, "the peer closed its output");
            let value: Value = serde_json::from_str(&self.line).expect("json");
            if value.get("id").is_some() {
                return (elapsed, value);
            }
        }
    }

    /// Send a plain request and wait for its answer, skipping any other message.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id();
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.flush();
        loop {
            let value = self.read();
            if value["id"] == id {
                return value;
            }
        }
    }

    /// The 2025-06-18 handshake: `initialize`, then `notifications/initialized`.
    pub fn initialize(&mut self) {
        self.call(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        );
        self.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        self.flush();
    }

    /// Close its stdin and wait up to ten seconds for it to exit, then kill it.
    pub fn close(mut self) {
        drop(self.input);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The result the minimal bench server gives the request `message`: the handshake, its
/// one tool `echo`, and the text an `echo` call was given; `{}` for anything else.
pub fn bench_result(message: &Value) -> Value {
    match message["method"].as_str() {
        Some("initialize") => json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bench", "version": "1"}
        }),
        Some("tools/list") => {
            json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
        }
        Some("tools/call") => {
            json!({"content": [{"type": "text", "text": message["params"]["arguments"]["text"]}]})
        }
        _ => json!({}),
    }
}
