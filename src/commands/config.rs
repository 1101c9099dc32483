//! `debussy config`: print the effective configuration and where each value came from.
//!
//! YAML (the default) shows every value with a `# from: …` comment and a header naming
//! the project root and the files that were looked for; JSON prints
//! `{project_root, config, sources}` for scripts.

use std::io::Write;

use crate::cli::{ConfigArgs, ConfigFormat, GlobalArgs};
use crate::config::{self, Discovery};
use crate::exit::{CommandResult, Exit, Failure};

/// Writing the output failed (a closed pipe is reported quietly by `main`).
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("failed to write the configuration")]
struct WriteError(#[source] std::io::Error);

pub(super) fn run(global: &GlobalArgs, args: &ConfigArgs) -> CommandResult {
    let loaded = super::load_config(global, Some(&args.overrides))?;
    let options = super::load_options(global, Some(&args.overrides))?;
    let discovery = config::discover(&options).map_err(Failure::usage)?;
    let text = match args.format {
        ConfigFormat::Yaml => {
            let mut text = header(&discovery, global.config.is_some());
            text.push_str(&config::to_annotated_yaml(&loaded));
            text
        }
        ConfigFormat::Json => {
            let json = serde_json::to_string_pretty(&config::to_json(&loaded))
                .map_err(|err| Failure::failed(miette::miette!("failed to encode JSON: {err}")))?;
            format!("{json}\n")
        }
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|err| Failure::failed(WriteError(err)))?;
    Ok(Exit::Success)
}

/// Comment lines naming the project root and the files that were (or would be) read.
fn header(discovery: &Discovery, from_flag: bool) -> String {
    let mut out = format!("# project root: {}\n", discovery.project_root.display());
    match &discovery.user_file {
        Some(path) if path.is_file() => out.push_str(&format!("# user file: {}\n", path.display())),
        Some(path) => out.push_str(&format!("# user file: {} (not found)\n", path.display())),
        None => out.push_str("# user file: none (no home directory)\n"),
    }
    match (&discovery.project_file, from_flag) {
        (Some(path), true) => {
            out.push_str(&format!("# project file (--config): {}\n", path.display()));
        }
        (Some(path), false) => out.push_str(&format!("# project file: {}\n", path.display())),
        (None, _) => out.push_str("# project file: none (no .debussy/config.yaml here or above)\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn header_names_root_and_files() {
        let discovery = Discovery {
            user_file: Some(PathBuf::from("/nonexistent/debussy/config.yaml")),
            project_file: Some(PathBuf::from("/p/.debussy/config.yaml")),
            project_root: PathBuf::from("/p"),
        };
        assert_eq!(
            header(&discovery, false),
            "# project root: /p\n\
             # user file: /nonexistent/debussy/config.yaml (not found)\n\
             # project file: /p/.debussy/config.yaml\n"
        );
        let discovery = Discovery {
            user_file: None,
            project_file: None,
            ..discovery
        };
        let shown = header(&discovery, false);
        assert!(shown.contains("# user file: none (no home directory)"));
        assert!(shown.contains("# project file: none"));
    }
}
