//! Sprig's digests and encodings (`sha256sum`, `b64enc`, ...) and JSON (`toJson`, `toPrettyJson`,
//! `toRawJson`, `fromJson` and their `must*` forms).

use super::*;

/// Digests and base32/base64.
pub(super) fn register_digests(m: &mut Table) {
    use crate::template::digest;
    string_fns!(m,
        "sha1sum" => digest::sha1sum, "sha256sum" => digest::sha256sum,
        "sha512sum" => digest::sha512sum, "adler32sum" => digest::adler32sum,
        "b32enc" => digest::b32enc, "b32dec" => digest::b32dec,
        "b64enc" => digest::b64enc, "b64dec" => digest::b64dec,
    );
}

/// Register Sprig's JSON functions.
pub(super) fn register_json(m: &mut Table) {
    use P::*;
    register(m, "toJson", &[Any], None, |a| {
        Ok(V::string(marshal(&a[0], true, None).unwrap_or_default()))
    });
    register(m, "mustToJson", &[Any], None, |a| {
        marshal(&a[0], true, None).map(V::string)
    });
    register(m, "toPrettyJson", &[Any], None, |a| {
        Ok(V::string(
            marshal(&a[0], true, Some("  ")).unwrap_or_default(),
        ))
    });
    register(m, "mustToPrettyJson", &[Any], None, |a| {
        marshal(&a[0], true, Some("  ")).map(V::string)
    });
    let raw: Func = |a| marshal(&a[0], false, None).map(V::string);
    register(m, "toRawJson", &[Any], None, raw);
    register(m, "mustToRawJson", &[Any], None, raw);
    register(m, "fromJson", &[Str], None, |a| {
        Ok(go_unmarshal(str_of(&a[0])).unwrap_or(V::Nil))
    });
    register(m, "mustFromJson", &[Str], None, |a| {
        go_unmarshal(str_of(&a[0]))
    });
}
