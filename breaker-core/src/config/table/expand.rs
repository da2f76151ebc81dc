// What one key table becomes: `config_table!` (grammar.rs) checks the rows and calls this
// macro with them. Every path below is resolved where the table is declared, which imports
// the vocabulary of `config::table` (`Field`, `Limit`, `TableKey`, `Value`, ...).

/// Writes a pattern's config type, its builder, its key enum and its public key names from the
/// rows `config_table!` checked.
macro_rules! config_expand {
    (
        keys: [$(#[$keys_meta:meta])*] $keys:ident,
        config: [$(#[$config_meta:meta])*] $Config:ident,
        builder: [$(#[$builder_meta:meta])*] $Builder:ident,
        key: [$(#[$key_meta:meta])*] $Key:ident,
        spring: [$root:literal, $ignored:expr, $unsupported:expr],
        across: $across:ident,
        extra: [$( $extra:ident: $extra_ty:ty = $extra_default:expr, )*],
        rows: [$(
            [
                [$($doc:literal)+] $variant:ident $field:ident ($ty:ty) ($default:expr) $shape:ident
                $constant:ident $name:literal ($rule:expr)
            ]
        )+],
    ) => {
        $(#[$keys_meta])*
        pub mod $keys {
            $(
                $(#[doc = $doc])+
                pub const $constant: &str = $name;
            )+
            /// In a configuration file: the shared config a section starts from (`configs.<name>`).
            pub const BASE_CONFIG: &str = "base-config";

            /// Every key's name, in the table's order (`base-config` last).
            pub const ALL: [&str; [$(stringify!($variant)),+ , "BaseConfig"].len()] =
                [$($constant,)+ BASE_CONFIG];
        }

        $(#[$key_meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub(crate) enum $Key {
            $(
                $(#[doc = $doc])+
                $variant,
            )+
            /// In a configuration file: the shared config a section starts from.
            BaseConfig,
        }

        impl $Key {
            /// Every key, in the table's order.
            pub(crate) const ALL: [$Key; [$(stringify!($variant)),+ , "BaseConfig"].len()] =
                [$($Key::$variant,)+ $Key::BaseConfig];
        }

        impl TableKey for $Key {
            const ALL: &'static [$Key] = &$Key::ALL;
            const BASE_CONFIG: $Key = $Key::BaseConfig;

            fn name(self) -> &'static str {
                match self {
                    $( $Key::$variant => $keys::$constant, )+
                    $Key::BaseConfig => $keys::BASE_CONFIG,
                }
            }

            fn value_kind(self) -> ValueKind {
                match self {
                    $( $Key::$variant => <$ty as Field>::KIND, )+
                    $Key::BaseConfig => ValueKind::Name,
                }
            }

            fn limit(self) -> Limit {
                match self {
                    $( $Key::$variant => $rule, )+
                    $Key::BaseConfig => Limit::None,
                }
            }
        }

        // A rule that does not fit its row's type (a percentage's limit on a duration) stops
        // the build here, naming the key.
        $(
            const _: () = assert!(
                fits(<$ty as Field>::KIND, $rule),
                concat!("the rule of `", $name, "` does not fit the type of its value")
            );
        )+

        $(#[$config_meta])*
        pub struct $Config {
            $( $field: $ty, )+
            $( $extra: $extra_ty, )*
        }

        impl Default for $Config {
            fn default() -> Self {
                $Config {
                    $( $field: $default, )+
                    $( $extra: $extra_default, )*
                }
            }
        }

        impl $Config {
            /// A builder starting from the defaults.
            pub fn builder() -> $Builder {
                $Builder { config: $Config::default() }
            }

            /// A builder starting from this configuration (a base config with per-instance
            /// overrides).
            pub fn to_builder(&self) -> $Builder {
                $Builder { config: self.clone() }
            }

            $( config_expand!(@getter $shape [$($doc)+] $name $field $ty); )+
        }

        $(#[$builder_meta])*
        pub struct $Builder {
            config: $Config,
        }

        impl $Builder {
            $( config_expand!(@setter $shape [$($doc)+] $name $field $ty); )+

            /// Checks every value and returns the configuration, or an error naming the first
            /// bad key and its value: the checks across keys first, then each key's rule in the
            /// table's order.
            pub fn build(self) -> Result<$Config, ConfigError> {
                let mut config = self.config;
                config.$across()?;
                $(
                    if let Some(value) = Field::value(&config.$field) {
                        $Key::$variant.limit().check($name, &value)?;
                    }
                )+
                Ok(config)
            }
        }

        impl Pattern for $Config {
            const ROOT: &'static str = $root;
            const IGNORED: &'static [&'static str] = $ignored;
            const UNSUPPORTED: &'static [(&'static str, &'static str)] = $unsupported;
            type Key = $Key;
            type Builder = $Builder;

            fn defaults() -> $Builder {
                $Config::builder()
            }

            fn starting_from(&self) -> $Builder {
                self.to_builder()
            }

            fn apply(
                builder: &mut $Builder,
                key: $Key,
                value: &Value,
                kinds: &ErrorKinds,
            ) -> Result<(), String> {
                match key {
                    $( $Key::$variant => builder.config.$field = Field::from_file(value, kinds)?, )+
                    // The loader follows it; it sets nothing.
                    $Key::BaseConfig => {}
                }
                Ok(())
            }

            fn build(builder: $Builder) -> Result<$Config, ConfigError> {
                builder.build()
            }
        }
    };

    // A value read and set whole: the getter returns a copy.
    (@getter value [$($doc:literal)+] $name:literal $field:ident $ty:ty) => {
        #[doc = concat!("`", $name, "`:")]
        $(#[doc = $doc])+
        pub fn $field(&self) -> $ty {
            self.$field
        }
    };
    (@setter value [$($doc:literal)+] $name:literal $field:ident $ty:ty) => {
        #[doc = concat!("Sets `", $name, "`:")]
        $(#[doc = $doc])+
        pub fn $field(mut self, value: $ty) -> Self {
            self.config.$field = value;
            self
        }
    };
    // A list of error kinds: read as a slice, set from any iterator (replacing the list).
    (@getter kinds [$($doc:literal)+] $name:literal $field:ident $ty:ty) => {
        #[doc = concat!("`", $name, "`:")]
        $(#[doc = $doc])+
        pub fn $field(&self) -> &[ErrorKind] {
            &self.$field
        }
    };
    (@setter kinds [$($doc:literal)+] $name:literal $field:ident $ty:ty) => {
        #[doc = concat!("Sets `", $name, "` (replacing any earlier list):")]
        $(#[doc = $doc])+
        pub fn $field(mut self, kinds: impl IntoIterator<Item = ErrorKind>) -> Self {
            self.config.$field = kinds.into_iter().collect();
            self
        }
    };
}
