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
//! writing through it would create a file at a place the command line never named. So is a
//! symlink owned by another user in a sticky world-writable directory such as `/tmp` (unless
//! the directory's owner owns it), as the kernel's `fs.protected_symlinks` refuses to follow it:
//! another user may have planted it there.
//!
//! A target that is not a regular file — a device (`/dev/null`, `/dev/stdout`), a FIFO — is
//! written in place, as a shell redirection does: it is never replaced. A socket cannot be
//! opened, and is refused.
//!
//! [`write_owned`] is for files the server generates (its CA bundle): their directory must be
//! owned by the process's user (or root) and writable by no one else.

use std::fs::{File, OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use tempfile::NamedTempFile;

/// Mode of a file that did not exist before (less the umask), as `open(2)` creates files.
const NEW_FILE_MODE: u32 = 0o666;

/// A file being written in place of `target`, committed by [`AtomicFile::commit`].
pub struct AtomicFile {
    /// What the user named, for messages.
    shown: PathBuf,
    how: How,
}

enum How {
    /// A temporary file renamed over `target` (a symlink's destination, resolved).
    Replace {
        target: PathBuf,
        temp: NamedTempFile,
    },
    /// Not a regular file: written in place.
    InPlace(File),
}

/// What a file that is neither regular nor a directory is, for messages.
fn special_kind(t: std::fs::FileType) -> Option<&'static str> {
    if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

impl AtomicFile {
    /// Start replacing `path`: the temporary file is created now, beside the file replaced. A
    /// path that names something other than a regular file or a directory (symlinks followed)
    /// is opened for writing in place instead.
    pub fn create(path: &Path) -> Result<AtomicFile> {
        refuse_planted_link(path)?;
        if let Ok(m) = std::fs::metadata(path) {
            if let Some(kind) = special_kind(m.file_type()) {
                let file = OpenOptions::new().write(true).open(path).with_context(|| {
                    format!(
                        "writing {}: it is {kind}, written in place (never replaced), and it cannot be opened for writing",
                        path.display()
                    )
                })?;
                return Ok(AtomicFile {
                    shown: path.to_path_buf(),
                    how: How::InPlace(file),
                });
            }
        }
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
            shown: path.to_path_buf(),
            how: How::Replace { target, temp },
        })
    }

    /// The file to write the new contents to (the temporary file, or the target itself when it
    /// is written in place).
    pub fn file(&mut self) -> &mut File {
        match &mut self.how {
            How::Replace { temp, .. } => temp.as_file_mut(),
            How::InPlace(f) => f,
        }
    }

    /// Sync the data, rename the temporary file over the target, sync the directory (in place:
    /// nothing more to do).
    pub fn commit(self) -> Result<()> {
        let shown = self.shown.display().to_string();
        let (target, temp) = match self.how {
            How::Replace { target, temp } => (target, temp),
            How::InPlace(mut f) => return f.flush().with_context(|| format!("writing {shown}")),
        };
        temp.as_file()
            .sync_all()
            .with_context(|| format!("writing {shown}"))?;
        temp.persist(&target)
            .map_err(|e| e.error)
            .with_context(|| format!("writing {shown}"))?;
        sync_dir(&target).with_context(|| format!("writing {shown}"))
    }
}

/// The process's effective user.
fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The directory holding `path`.
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Refuse `path` when it is a symlink owned by another user than this process's and the
/// directory's owner, in a sticky world-writable directory (`fs.protected_symlinks`).
fn refuse_planted_link(path: &Path) -> Result<()> {
    let Ok(link) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !link.file_type().is_symlink() {
        return Ok(());
    }
    let dir = parent_dir(path);
    let Ok(d) = std::fs::metadata(dir) else {
        return Ok(());
    };
    if d.mode() & 0o1002 == 0o1002 && link.uid() != euid() && link.uid() != d.uid() {
        bail!(
            "writing {}: it is a symlink owned by another user (uid {}) in the sticky world-writable directory {}; refusing to follow it",
            path.display(),
            link.uid(),
            dir.display()
        );
    }
    Ok(())
}

/// Refuse a directory for files the server generates unless this process's user or root owns
/// it and no one else can write to it (a symlink to it too must be theirs).
fn check_owned_dir(dir: &Path) -> Result<()> {
    let me = euid();
    let trusted = |uid: u32| uid == me || uid == 0;
    let link =
        std::fs::symlink_metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
    if link.file_type().is_symlink() && !trusted(link.uid()) {
        bail!(
            "{} is a symlink owned by another user (uid {}); refusing to write there",
            dir.display(),
            link.uid()
        );
    }
    let d = std::fs::metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
    if !d.is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    if !trusted(d.uid()) {
        bail!(
            "the directory {} is owned by another user (uid {}); refusing to write there",
            dir.display(),
            d.uid()
        );
    }
    if d.mode() & 0o022 != 0 {
        bail!(
            "the directory {} is writable by other users (mode {:o}); refusing to write there",
            dir.display(),
            d.mode() & 0o7777
        );
    }
    Ok(())
}

/// Replace `path` with `contents` as [`write_file`] does, for a file the server generates: a
/// missing directory is created (mode 0700); the directory must be owned by this process's user
/// (or root) and writable by no one else, and `path` must not be a symlink owned by someone
/// else; otherwise nothing is written.
pub fn write_owned(path: &Path, contents: &[u8]) -> Result<()> {
    let dir = parent_dir(path);
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
    }
    check_owned_dir(dir).with_context(|| format!("writing {}", path.display()))?;
    if let Ok(link) = std::fs::symlink_metadata(path) {
        if link.file_type().is_symlink() && link.uid() != euid() && link.uid() != 0 {
            bail!(
                "writing {}: it is a symlink owned by another user (uid {}); refusing to follow it",
                path.display(),
                link.uid()
            );
        }
    }
    write_file(path, contents)
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

    use rustix::fs::{mkfifoat, mknodat, FileType, Mode, CWD};

    fn root() -> bool {
        euid() == 0
    }

    /// A FIFO target is written in place: a reader gets the contents and the FIFO stays.
    #[test]
    fn a_fifo_is_written_in_place_not_replaced() {
        let d = dir("fifo");
        let p = d.path().join("out.fifo");
        mkfifoat(CWD, &p, Mode::from_raw_mode(0o600)).expect("mkfifo");
        let reader = {
            let p = p.clone();
            std::thread::spawn(move || std::fs::read(&p).expect("read the FIFO"))
        };
        write_file(&p, b"through the pipe").expect("written in place");
        assert_eq!(reader.join().expect("reader"), b"through the pipe");
        let t = std::fs::symlink_metadata(&p)
            .expect("still there")
            .file_type();
        assert!(t.is_fifo(), "the FIFO was replaced: {t:?}");
        assert_eq!(
            std::fs::read_dir(d.path()).expect("list").count(),
            1,
            "no temp file"
        );
    }

    /// A socket cannot be written: refused, and left as it is.
    #[test]
    fn a_socket_is_refused_and_left_alone() {
        let d = dir("socket");
        let p = d.path().join("s.sock");
        let _l = std::os::unix::net::UnixListener::bind(&p).expect("bind");
        let e = format!("{:#}", write_file(&p, b"x").unwrap_err());
        assert!(
            e.contains("it is a socket, written in place (never replaced)"),
            "{e}"
        );
        assert!(std::fs::symlink_metadata(&p)
            .expect("there")
            .file_type()
            .is_socket());
    }

    /// A character device (here a null device made in a scratch directory, as root only) is
    /// written in place; the node stays a device.
    #[test]
    fn a_device_is_written_in_place_not_replaced() {
        if !root() {
            eprintln!("NOTICE: not root: mknod unavailable, the device case was not tried");
            return;
        }
        let d = dir("device");
        let p = d.path().join("null");
        // The null device (1, 3), made in a scratch directory: the real /dev/null is never touched.
        let dev = rustix::fs::makedev(1, 3);
        if let Err(e) = mknodat(
            CWD,
            &p,
            FileType::CharacterDevice,
            Mode::from_raw_mode(0o666),
            dev,
        ) {
            eprintln!("NOTICE: mknod refused here ({e}); the device case was not tried");
            return;
        }
        let link = d.path().join("stdout-like");
        std::os::unix::fs::symlink(&p, &link).expect("symlink");
        write_file(&p, b"discarded").expect("written in place");
        write_file(&link, b"discarded").expect("written through the link, in place");
        let t = std::fs::symlink_metadata(&p).expect("there").file_type();
        assert!(t.is_char_device(), "the device was replaced: {t:?}");
        assert_eq!(
            std::fs::read_dir(d.path()).expect("list").count(),
            2,
            "no temp file"
        );
    }

    /// In a sticky world-writable directory, a symlink owned by another user is not followed;
    /// one owned by this user is.
    #[test]
    fn a_planted_link_in_a_sticky_directory_is_refused() {
        let d = dir("sticky");
        let shared = d.path().join("tmp");
        std::fs::create_dir(&shared).expect("dir");
        std::fs::set_permissions(&shared, Permissions::from_mode(0o1777)).expect("chmod");
        let victim = d.path().join("victim.yaml");
        std::fs::write(&victim, "precious").expect("write");
        let mine = shared.join("mine.yaml");
        std::os::unix::fs::symlink(&victim, &mine).expect("symlink");
        write_file(&mine, b"mine").expect("my own link is followed");
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "mine");
        if !root() {
            eprintln!("NOTICE: not root: a link owned by another user cannot be made here");
            return;
        }
        let planted = shared.join("planted.yaml");
        std::os::unix::fs::symlink(&victim, &planted).expect("symlink");
        std::os::unix::fs::lchown(&planted, Some(65534), Some(65534)).expect("lchown");
        let e = format!("{:#}", write_file(&planted, b"evil").unwrap_err());
        assert!(
            e.contains(
                "symlink owned by another user (uid 65534) in the sticky world-writable directory"
            ),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "mine");
    }

    /// Generated files go only to a directory this user (or root) owns and no one else can
    /// write, never through another user's symlink.
    #[test]
    fn owned_writes_refuse_directories_others_control() {
        let d = dir("owned");
        let fresh = d.path().join("new/sub/ca.pem");
        write_owned(&fresh, b"ca").expect("a new directory is created, mode 0700");
        assert_eq!(mode(fresh.parent().unwrap()), 0o700);
        let open = d.path().join("open");
        std::fs::create_dir(&open).expect("dir");
        std::fs::set_permissions(&open, Permissions::from_mode(0o1777)).expect("chmod");
        let e = format!(
            "{:#}",
            write_owned(&open.join("ca.pem"), b"ca").unwrap_err()
        );
        assert!(e.contains("is writable by other users (mode 1777)"), "{e}");
        assert!(!open.join("ca.pem").exists());
        if !root() {
            eprintln!("NOTICE: not root: files owned by another user cannot be made here");
            return;
        }
        let theirs = d.path().join("theirs");
        std::fs::create_dir(&theirs).expect("dir");
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown");
        let e = format!(
            "{:#}",
            write_owned(&theirs.join("ca.pem"), b"ca").unwrap_err()
        );
        assert!(e.contains("is owned by another user (uid 65534)"), "{e}");
        let victim = d.path().join("victim");
        std::fs::write(&victim, "precious").expect("write");
        let ok_dir = d.path().join("mine");
        std::fs::create_dir(&ok_dir).expect("dir");
        let link = ok_dir.join("ca.pem");
        std::os::unix::fs::symlink(&victim, &link).expect("symlink");
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).expect("lchown");
        let e = format!("{:#}", write_owned(&link, b"ca").unwrap_err());
        assert!(
            e.contains("symlink owned by another user (uid 65534)"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "precious");
    }
}
