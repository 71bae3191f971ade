//! Sprig's path functions (`base`, `dir`, `ext`, `clean`, `isAbs` and their `os*` forms).

use super::*;

/// Go's `path` functions; on Linux the `os*` (`path/filepath`) variants are the same.
pub(super) fn register_paths(m: &mut Table) {
    use crate::template::gopath;
    string_fns!(m,
        "base" => gopath::base, "osBase" => gopath::base,
        "dir" => gopath::dir, "osDir" => gopath::dir,
        "ext" => gopath::ext, "osExt" => gopath::ext,
        "clean" => gopath::clean, "osClean" => gopath::clean,
    );
    for name in ["isAbs", "osIsAbs"] {
        register(m, name, &[P::Str], None, |a| {
            Ok(V::Bool(gopath::is_abs(str_of(&a[0]))))
        });
    }
}
