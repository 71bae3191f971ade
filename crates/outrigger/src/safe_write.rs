//! Replacing a file safely: `inject -o FILE` and the CA bundle `serve` writes.
//!
//! The new contents go to a temporary file created exclusively (`O_EXCL`, so a planted file or
//! symlink at its name is never opened or followed) with a random name in the target's own
//! directory; it gets the replaced file's mode (and owner, where the process may set it), its data
//! is synced, then it is renamed over the target and the directory is synced. Until that rename
//! the target is untouched: a failed run drops the temporary file and leaves the old contents.
//!
//! A target that is a symlink is written through: the file it points to is replaced (in that
//! file's directory) and the link stays, as editors do; a dangling symlink is refused, since
//! writing through it would create a file at a place the command line never named.

use std::fs::{File, Permissions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use tempfile::NamedTempFile;

/// Mode of a file that did not exist before (less the umask), as `open(2)` creates files.
const NEW_FILE_MODE: u32 = 0o666;

/// A file being written in place of `target`, committed by [`AtomicFile::commit`].
pub struct AtomicFile {
    /// The file replaced (a symlink's destination, resolved).
    target: PathBuf,
    /// What the user named, for messages.
    shown: PathBuf,
    temp: NamedTempFile,
}

impl AtomicFile {
    /// Start replacing `path`: the temporary file is created now, beside the file replaced.
    pub fn create(path: &Path) -> Result<AtomicFile> {
        let target = resolve(path)?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target
            .file_name()
            .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
        let existing = std::fs::metadata(&target).ok().filter(|m| m.is_file());
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .permissions(Permissions::from_mode(NEW_FILE_MODE))
            .tempfile_in(&dir)
            .with_context(|| format!("writing {}", path.display()))?;
        if let Some(m) = existing {
            let file = temp.as_file();
            // The owner first: changing it may clear set-id bits the mode then restores.
            if m.uid() != unix_uid(file) || m.gid() != unix_gid(file) {
                // Only root (or the owner, for the group) may; otherwise the file is ours.
                let _ = std::os::unix::fs::fchown(file, Some(m.uid()), Some(m.gid()));
            }
            file.set_permissions(Permissions::from_mode(m.mode() & 0o7777))
                .with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(AtomicFile {
            target,
            shown: path.to_path_buf(),
            temp,
        })
    }

    /// The temporary file, to write the new contents to.
    pub fn file(&mut self) -> &mut File {
        self.temp.as_file_mut()
    }

    /// Sync the data, rename the temporary file over the target, sync the directory.
    pub fn commit(self) -> Result<()> {
        let shown = self.shown.display().to_string();
        self.temp
            .as_file()
            .sync_all()
            .with_context(|| format!("writing {shown}"))?;
        self.temp
            .persist(&self.target)
            .map_err(|e| e.error)
            .with_context(|| format!("writing {shown}"))?;
        sync_dir(&self.target).with_context(|| format!("writing {shown}"))
    }
}

/// Replace `path` with `contents` as [`AtomicFile`] does, creating missing parent directories.
pub fn write_file(path: &Path, contents: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut f = AtomicFile::create(path)?;
    f.file()
        .write_all(contents)
        .with_context(|| format!("writing {}", path.display()))?;
    f.commit()
}

/// The file `path` stands for: itself, or the destination of a symlink.
fn resolve(path: &Path) -> Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(path) {
            Ok(p) => Ok(p),
            Err(e) => bail!(
                "writing {}: it is a symlink whose destination cannot be resolved ({e}); \
                 refusing to create a file through it",
                path.display()
            ),
        },
        _ => Ok(path.to_path_buf()),
    }
}

fn unix_uid(f: &File) -> u32 {
    f.metadata().map_or(u32::MAX, |m| m.uid())
}

fn unix_gid(f: &File) -> u32 {
    f.metadata().map_or(u32::MAX, |m| m.gid())
}

/// Sync the directory holding `file`, so the rename survives a crash. File systems that cannot
/// sync a directory (`EINVAL`) are left as they are.
fn sync_dir(file: &Path) -> std::io::Result<()> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match File::open(dir).and_then(|d| d.sync_all()) {
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(test: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("outrigger-{test}-"))
            .tempdir()
            .expect("temp dir")
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).expect("exists").mode() & 0o7777
    }

    #[test]
    fn replaced_file_keeps_its_mode() {
        let d = dir("mode");
        let p = d.path().join("secret.yaml");
        std::fs::write(&p, "old").expect("write");
        std::fs::set_permissions(&p, Permissions::from_mode(0o600)).expect("chmod");
        write_file(&p, b"new").expect("replaced");
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "new");
        assert_eq!(mode(&p), 0o600);
        std::fs::set_permissions(&p, Permissions::from_mode(0o640)).expect("chmod");
        write_file(&p, b"newer").expect("replaced");
        assert_eq!(mode(&p), 0o640);
    }

    #[test]
    fn new_file_gets_the_umask_mode_and_no_temp_file_is_left() {
        let d = dir("new");
        let p = d.path().join("sub/out.yaml");
        write_file(&p, b"x").expect("written");
        // 0666 less the umask: never more than that, and at least readable by the owner.
        assert_eq!(mode(&p) & !0o666, 0);
        assert_ne!(mode(&p) & 0o400, 0);
        let names: Vec<_> = std::fs::read_dir(p.parent().expect("dir"))
            .expect("list")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["out.yaml"]);
    }

    #[test]
    fn abandoned_write_leaves_the_target_untouched() {
        let d = dir("abandon");
        let p = d.path().join("out.yaml");
        std::fs::write(&p, "old").expect("write");
        let mut f = AtomicFile::create(&p).expect("started");
        f.file().write_all(b"half").expect("written");
        drop(f);
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "old");
        assert_eq!(std::fs::read_dir(d.path()).expect("list").count(), 1);
    }

    #[test]
    fn symlinked_target_is_written_through_and_dangling_one_refused() {
        let d = dir("symlink");
        let real = d.path().join("real.yaml");
        std::fs::write(&real, "old").expect("write");
        std::fs::set_permissions(&real, Permissions::from_mode(0o600)).expect("chmod");
        let link = d.path().join("link.yaml");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        write_file(&link, b"new").expect("written through");
        assert!(std::fs::symlink_metadata(&link)
            .expect("link")
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).expect("read"), "new");
        assert_eq!(mode(&real), 0o600);
        let dangling = d.path().join("dangling.yaml");
        std::os::unix::fs::symlink(d.path().join("nowhere/x"), &dangling).expect("symlink");
        let e = format!("{:#}", write_file(&dangling, b"x").unwrap_err());
        assert!(e.contains("dangling.yaml") && e.contains("symlink"), "{e}");
    }
}
