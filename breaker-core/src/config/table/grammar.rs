// The grammar of a pattern's key table. This file holds nothing but `config_table!`, which
// names no item of the crate: it checks that every row has all its columns, then hands the
// rows to `config_expand!` (expand.rs), which writes the code. The doctests of table/mod.rs
// include this file on its own to show that a row without its rule does not compile.

/// One pattern's configuration, declared as one row per key. See the module docs of
/// `config::table` for what each column means and what is generated from it.
macro_rules! config_table {
    (
        $(#[$keys_meta:meta])*
        pub mod $keys:ident;
        $(#[$config_meta:meta])*
        pub struct $Config:ident;
        $(#[$builder_meta:meta])*
        pub struct $Builder:ident;
        $(#[$key_meta:meta])*
        pub(crate) enum $Key:ident;
        spring: { root: $root:literal, ignored: $ignored:expr, unsupported: $unsupported:expr $(,)? }
        across: $across:ident;
        extra { $( $extra:ident: $extra_ty:ty = $extra_default:expr, )* }
        rows {
            $(
                $(#[doc = $doc:literal])+
                $variant:ident: $field:ident: $ty:ty = $default:expr, $shape:ident {
                    name: $constant:ident = $name:literal,
                    rule: $rule:expr,
                }
            )+
        }
    ) => {
        config_expand! {
            keys: [$(#[$keys_meta])*] $keys,
            config: [$(#[$config_meta])*] $Config,
            builder: [$(#[$builder_meta])*] $Builder,
            key: [$(#[$key_meta])*] $Key,
            spring: [$root, $ignored, $unsupported],
            across: $across,
            extra: [$( $extra: $extra_ty = $extra_default, )*],
            rows: [$(
                [
                    [$($doc)+] $variant $field ($ty) ($default) $shape $constant $name ($rule)
                ]
            )+],
        }
    };
}
