//! rmcp's own client talks to the rmcp test server through the supervisor, across a
//! restart, and hears about it.

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::NotificationContext;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::support::{WAIT, debussy, test_server};

#[derive(Clone)]
struct Listener {
    list_changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }
}

async fn call_json(
    client: &rmcp::service::RunningService<RoleClient, Listener>,
    name: &'static str,
    arguments: Value,
) -> Value {
    let mut params = CallToolRequestParams::new(name);
    if let Value::Object(map) = arguments {
        params = params.with_arguments(map);
    }
    let result = tokio::time::timeout(WAIT, client.call_tool(params))
        .await
        .expect("in time")
        .unwrap_or_else(|err| panic!("{name} failed: {err}"));
    assert_ne!(result.is_error, Some(true), "{name}: {result:?}");
    let text = result.content[0]
        .as_text()
        .expect("text content")
        .text
        .clone();
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

#[tokio::test]
async fn the_rmcp_client_survives_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut command = tokio::process::Command::new(debussy());
    command
        .args(["mcp", "supervise", "--state-dir"])
        .arg(dir.path().join("state"))
        .arg("--")
        .arg(test_server())
        .stderr(std::process::Stdio::null());
    let transport = TokioChildProcess::new(command).expect("spawn the supervisor");
    let (tx, mut list_changed) = mpsc::unbounded_channel();
    let client = tokio::time::timeout(WAIT, Listener { list_changed: tx }.serve(transport))
        .await
        .expect("handshake in time")
        .expect("handshake");
    let info = client.peer_info().expect("server info");
    let capabilities = serde_json::to_value(&info.capabilities).expect("json");
    assert_eq!(capabilities["tools"]["listChanged"], true, "{capabilities}");

    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    assert!(
        names.contains(&"whoami".to_owned()) && names.contains(&"restart_server".to_owned()),
        "{names:?}"
    );

    let before = call_json(&client, "whoami", json!({})).await;
    let restarted = call_json(
        &client,
        "restart_server",
        json!({"reason": "rmcp client test"}),
    )
    .await;
    assert_eq!(restarted["restarted"], true, "{restarted}");
    tokio::time::timeout(Duration::from_secs(10), list_changed.recv())
        .await
        .expect("list_changed in time")
        .expect("list_changed");
    let after = call_json(&client, "whoami", json!({})).await;
    assert_ne!(before["pid"], after["pid"]);
    assert_eq!(after["generation"], 2);
    assert_eq!(
        call_json(&client, "echo", json!({"text": "ok"})).await,
        "ok"
    );
    tokio::time::timeout(WAIT, client.cancel())
        .await
        .expect("closes in time")
        .expect("close");
}
