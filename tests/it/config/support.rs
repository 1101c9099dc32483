//! A sandboxed project directory and a `debussy` command that runs in it.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

use crate::support::project::json_of;

/// A temporary project, with its own home and config home.
pub struct Sandbox {
    _temp: tempfile::TempDir,
    /// The project directory (the command's working directory).
    pub root: PathBuf,
    /// `$HOME`.
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME`.
    pub config_home: PathBuf,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let temp = tempfile::tempdir().expect("temp dir");
        let root = temp.path().join("project");
        let home = temp.path().join("home");
        let config_home = temp.path().join("xdg-config");
        for dir in [&root, &home, &config_home] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        Sandbox {
            _temp: temp,
            root,
            home,
            config_home,
        }
    }

    /// `debussy ARGS…` in the project directory, with plain (unwrapped) diagnostics.
    pub fn debussy(&self, args: &[&str]) -> Command {
        let mut cmd = self.debussy_in(&self.root, args);
        cmd.env("NO_GRAPHICS", "1");
        cmd
    }

    /// `debussy ARGS…` in `dir`, with miette's graphical diagnostics.
    pub fn debussy_in(&self, dir: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(crate::support::DEBUSSY);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("DEBUSSY_") {
                cmd.env_remove(name);
            }
        }
        cmd.current_dir(dir)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", &self.config_home)
            .env("NO_COLOR", "1")
            .env_remove("NO_GRAPHICS")
            .args(args)
            .timeout(std::time::Duration::from_secs(60));
        cmd
    }

    /// Write a file under the project directory, creating its parents.
    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        write(&self.root.join(relative), text)
    }

    /// Write the project file `.debussy/config.yaml`.
    pub fn project_file(&self, text: &str) -> PathBuf {
        self.write(".debussy/config.yaml", text)
    }

    /// Write the user file `$XDG_CONFIG_HOME/debussy/config.yaml`.
    pub fn user_file(&self, text: &str) -> PathBuf {
        write(&self.config_home.join("debussy/config.yaml"), text)
    }

    /// `debussy config --format json ARGS…`, which must succeed, parsed.
    pub fn config_json(&self, args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
        let mut all = vec!["config", "--format", "json"];
        all.extend_from_slice(args);
        let mut cmd = self.debussy(&all);
        for (name, value) in env {
            cmd.env(name, value);
        }
        json_of(&cmd.output().expect("runs"), "debussy config")
    }
}

fn write(path: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
    path.to_path_buf()
}

/// The `{"kind", "detail"}` source object `debussy config --format json` shows.
pub fn source(kind: &str, detail: Option<&Path>) -> serde_json::Value {
    match detail {
        Some(path) => serde_json::json!({"kind": kind, "detail": path}),
        None => serde_json::json!({"kind": kind}),
    }
}

/// A source naming a variable or flag.
pub fn named(kind: &str, name: &str) -> serde_json::Value {
    serde_json::json!({"kind": kind, "detail": name})
}
