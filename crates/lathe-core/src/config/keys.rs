//! The names of `setup()`'s options, from their declaration
//! ([`super::settings::SETTINGS`]). The help-tag test
//! (`tests/all/help_tags.rs`) checks that each has a tag in `doc/lathe.txt`.

/// Every option `setup()` accepts: the top-level keys, then the keys of
/// the `bash` and `permissions` tables as `bash.timeout_ms`,
/// `permissions.mode`, … Claude Code's camelCase spellings
/// (`permissions.defaultMode`) are left out: each is another name for the
/// snake_case key next to it. Options the Lua side takes
/// (`default_mappings`) are left out too.
pub fn setup_keys() -> Vec<String> {
    super::settings::core_keys()
}

#[cfg(test)]
mod tests {
    use serde::de::{self, Deserialize, Deserializer, Visitor};

    use super::super::{RawBash, RawPermissions};
    use super::*;

    /// The field names serde's derive hands to `deserialize_struct` for `T`.
    fn fields<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
        let mut out: &'static [&'static str] = &[];
        let _ = T::deserialize(FieldNames { out: &mut out });
        out
    }

    /// A deserializer that records the field list of the struct asked for
    /// and then fails (nothing is built).
    struct FieldNames<'a> {
        out: &'a mut &'static [&'static str],
    }

    impl<'de> Deserializer<'de> for FieldNames<'_> {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            *self.out = fields;
            Err(de::Error::custom("field names taken"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }

    #[test]
    fn the_keys_are_the_ones_setup_accepts() {
        let keys = setup_keys();
        for k in [
            "model",
            "provider",
            "hooks",
            "save",
            "bash.timeout_ms",
            "permissions.allow",
        ] {
            assert!(keys.iter().any(|x| x == k), "{k} missing from {keys:?}");
        }
        assert!(!keys.iter().any(|k| k.contains("defaultMode")));
        assert!(!keys.iter().any(|k| k == "default_mappings"));
        // Each accepted, and a key not listed is refused.
        let cwd = std::path::Path::new("/tmp");
        for k in keys.iter().filter(|k| !k.contains('.')) {
            let err =
                super::super::Config::from_setup(&serde_json::json!({ k.as_str(): "?" }), cwd)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
            assert!(!err.contains("unknown field"), "{k}: {err}");
        }
    }

    #[test]
    fn the_tables_with_their_own_parser_declare_the_keys_it_takes() {
        // `bash` and `permissions` keep serde structs for their shape (the
        // errors name the key inside); the declaration lists the same keys,
        // camelCase spellings aside.
        let keys = setup_keys();
        for (table, nested) in [
            ("bash", fields::<RawBash>()),
            ("permissions", fields::<RawPermissions>()),
        ] {
            let mut parsed: Vec<String> = nested
                .iter()
                .filter(|k| !k.chars().any(|c| c.is_ascii_uppercase()))
                .map(|k| format!("{table}.{k}"))
                .collect();
            let mut declared: Vec<String> = keys
                .iter()
                .filter(|k| k.starts_with(&format!("{table}.")))
                .cloned()
                .collect();
            parsed.sort();
            declared.sort();
            assert_eq!(parsed, declared, "{table}");
        }
    }
}
