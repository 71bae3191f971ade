//! Sprig's `semver` and `semverCompare` (Masterminds/semver v3, `template::semver`).

use super::*;

/// `semver` (the version in its canonical form: Go prints a `*semver.Version` through its
/// `String` method) and `semverCompare`.
pub(super) fn register_semver(m: &mut Table) {
    use P::*;
    register(m, "semver", &[Str], None, |a| {
        crate::template::semver::Version::parse(str_of(&a[0])).map(|v| V::string(v.to_string()))
    });
    register(m, "semverCompare", &[Str, Str], None, |a| {
        crate::template::semver::compare(str_of(&a[0]), str_of(&a[1])).map(V::Bool)
    });
}
