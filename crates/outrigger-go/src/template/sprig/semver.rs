//! Sprig's `semver` and `semverCompare` (Masterminds/semver v3, `template::semver`).

use super::*;

/// `semver` (a `*semver.Version`: Go prints it through its `String` method; a template can call
/// its methods, `.Minor`, `.IncPatch`, `.LessThan`, ...) and `semverCompare`.
pub(super) fn register_semver(m: &mut Table) {
    use P::*;
    register(m, "semver", &[Str], None, |a| {
        crate::template::semver::Version::parse(str_of(&a[0]))
            .map(|v| V::Semver(std::rc::Rc::new(v), true))
    });
    register(m, "semverCompare", &[Str, Str], None, |a| {
        crate::template::semver::compare(str_of(&a[0]), str_of(&a[1])).map(V::Bool)
    });
}
