//! Directories of debussy's own under a project: made where missing, and never a link.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};

/// Mode of the directories debussy makes for itself: its owner's alone.
const PRIVATE_DIR_MODE: u32 = 0o700;

/// Make `root/relative` a directory of debussy's own, one component at a time: each
/// missing one is created (mode 0700), each existing one must be a real directory. A
/// symbolic link anywhere below `root` — one a repository committed where debussy keeps
/// its files, say — is refused, never followed, so nothing debussy writes there can land
/// outside. `root` itself may be reached through links (that is the user's choice).
///
/// # Errors
/// `InvalidInput` naming the path when a component is a link, not a directory, or
/// `relative` leaves `root` (`..`, an absolute path); any error creating a directory.
pub fn private_dir(root: &Path, relative: &Path) -> io::Result<PathBuf> {
    let mut path = root.to_path_buf();
    for component in relative.components() {
        let Component::Normal(name) = component else {
            if component == Component::CurDir {
                continue;
            }
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} leaves {}", relative.display(), root.display()),
            ));
        };
        path.push(name);
        real_dir(&path)?;
    }
    Ok(path)
}

/// Make `path` a directory if it is missing; refuse it unless it is one (a link is not).
fn real_dir(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => judge(path, &meta),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            match std::fs::DirBuilder::new()
                .mode(PRIVATE_DIR_MODE)
                .create(path)
            {
                Ok(()) => Ok(()),
                // Made meanwhile (another debussy): judge what is there now.
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                    judge(path, &std::fs::symlink_metadata(path)?)
                }
                Err(err) => Err(err),
            }
        }
        Err(err) => Err(err),
    }
}

fn judge(path: &Path, meta: &std::fs::Metadata) -> io::Result<()> {
    if meta.file_type().is_symlink() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is a symbolic link; debussy keeps its files only in real directories and never follows a link there: remove it",
                path.display()
            ),
        ));
    }
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a directory: remove it", path.display()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn missing_directories_are_made_private_and_existing_ones_kept() {
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(root.path().join(".debussy")).expect("mkdir");
        let dir = private_dir(root.path(), Path::new(".debussy/runs/r1/1")).expect("made");
        assert_eq!(dir, root.path().join(".debussy/runs/r1/1"));
        let mode = std::fs::metadata(&dir).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        private_dir(root.path(), Path::new("./.debussy/runs/r1/1")).expect("again");
    }

    #[test]
    fn a_link_on_the_way_is_refused_and_nothing_made_through_it() {
        let root = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("outside");
        std::fs::create_dir(root.path().join(".debussy")).expect("mkdir");
        std::os::unix::fs::symlink(outside.path(), root.path().join(".debussy/runs"))
            .expect("link");
        let err = private_dir(root.path(), Path::new(".debussy/runs/r1")).expect_err("a link");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("runs is a symbolic link"), "{err}");
        assert!(!outside.path().join("r1").exists());
    }

    #[test]
    fn a_file_on_the_way_and_an_escape_are_refused() {
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::write(root.path().join(".debussy"), "").expect("write");
        let err = private_dir(root.path(), Path::new(".debussy/runs")).expect_err("a file");
        assert!(err.to_string().contains("not a directory"), "{err}");
        let err = private_dir(root.path(), Path::new("../elsewhere")).expect_err("escape");
        assert!(err.to_string().contains("leaves"), "{err}");
    }
}
