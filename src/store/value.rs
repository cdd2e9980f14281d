//! The values a store statement takes and gives back, the same for
//! SQLite and PostgreSQL: [`Value`] in (with `vals!`), [`CellRef`] and
//! [`FromCol`] out of a [`Row`]. Apart from `db.rs`, which runs the
//! statements, because what a value is does not depend on how a
//! connection is kept.

use anyhow::{anyhow, Result};
use bytes::BytesMut;
use postgres::types::{FromSql, IsNull, ToSql, Type};

use crate::status::{BootStatus, ExperimentStatus, RunStatus};

/// A parameter of a statement.
#[derive(Clone, Copy, Debug)]
pub enum Value<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'a str),
}

/// `[Value; N]` of the arguments, each through `Value::from`.
macro_rules! vals {
    ($($v:expr),* $(,)?) => { [$($crate::store::value::Value::from($v)),*] };
}
pub(crate) use vals;

macro_rules! value_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value<'_> {
            fn from(v: $t) -> Self {
                Value::Int(v as i64)
            }
        }
    )*};
}
value_from_int!(i64, i32, u32, usize, u8);

impl From<bool> for Value<'_> {
    fn from(v: bool) -> Self {
        Value::Int(v as i64)
    }
}
impl From<f64> for Value<'_> {
    fn from(v: f64) -> Self {
        Value::Real(v)
    }
}
impl<'a> From<&'a str> for Value<'a> {
    fn from(v: &'a str) -> Self {
        Value::Text(v)
    }
}
impl<'a> From<&'a String> for Value<'a> {
    fn from(v: &'a String) -> Self {
        Value::Text(v)
    }
}
impl<'a, T: Copy + Into<Value<'a>>> From<&'a T> for Value<'a>
where
    T: NotText,
{
    fn from(v: &'a T) -> Self {
        (*v).into()
    }
}
impl<'a, T: Into<Value<'a>>> From<Option<T>> for Value<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}
macro_rules! status_value {
    ($($t:ty),*) => {$(
        impl From<$t> for Value<'_> {
            fn from(v: $t) -> Self {
                Value::Text(v.as_str())
            }
        }
        impl NotText for $t {}
        impl FromCol for $t {
            fn from_cell(c: CellRef<'_>) -> Result<Self> {
                let s = String::from_cell(c)?;
                <$t>::parse(&s).ok_or_else(|| anyhow!("unknown status '{s}'"))
            }
        }
    )*};
}
status_value!(RunStatus, ExperimentStatus, BootStatus);
impl FromCol for crate::metric::Direction {
    fn from_cell(c: CellRef<'_>) -> Result<Self> {
        let s = String::from_cell(c)?;
        Self::parse(&s).ok_or_else(|| anyhow!("unknown direction '{s}' (lower or higher)"))
    }
}

/// The plain copyable values a reference may be taken of (`&u32` as well
/// as `u32`), which excludes `&str`/`&String` (handled on their own).
pub trait NotText {}
impl NotText for i64 {}
impl NotText for i32 {}
impl NotText for u32 {}
impl NotText for usize {}
impl NotText for bool {}
impl NotText for f64 {}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match *self {
            Value::Null => ValueRef::Null,
            Value::Int(i) => ValueRef::Integer(i),
            Value::Real(f) => ValueRef::Real(f),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

/// Written as the type PostgreSQL asks for: the store's integer columns
/// are BIGINT and its reals DOUBLE PRECISION, but a parameter compared
/// with a literal may be inferred as another type.
impl ToSql for Value<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(i)?.to_sql(ty, out),
                Type::FLOAT8 => (i as f64).to_sql(ty, out),
                Type::BOOL => (i != 0).to_sql(ty, out),
                _ => i.to_string().as_str().to_sql(ty, out),
            },
            Value::Real(f) => match *ty {
                Type::FLOAT4 => (f as f32).to_sql(ty, out),
                Type::FLOAT8 => f.to_sql(ty, out),
                _ => f.to_string().as_str().to_sql(ty, out),
            },
            Value::Text(s) => s.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

/// One cell of a result row, from either database.
#[derive(Clone, Copy, Debug)]
pub enum CellRef<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'a str),
}

impl<'a> FromSql<'a> for CellRef<'a> {
    fn from_sql(
        ty: &Type,
        raw: &'a [u8],
    ) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(match *ty {
            Type::INT8 => CellRef::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => CellRef::Int(i32::from_sql(ty, raw)? as i64),
            Type::INT2 => CellRef::Int(i16::from_sql(ty, raw)? as i64),
            Type::BOOL => CellRef::Int(bool::from_sql(ty, raw)? as i64),
            Type::FLOAT8 => CellRef::Real(f64::from_sql(ty, raw)?),
            Type::FLOAT4 => CellRef::Real(f32::from_sql(ty, raw)? as f64),
            _ => CellRef::Text(<&str>::from_sql(ty, raw)?),
        })
    }

    fn from_sql_null(
        _: &Type,
    ) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(CellRef::Null)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// What a column can be read as.
pub trait FromCol: Sized {
    fn from_cell(c: CellRef<'_>) -> Result<Self>;
}

impl FromCol for i64 {
    fn from_cell(c: CellRef<'_>) -> Result<Self> {
        match c {
            CellRef::Int(i) => Ok(i),
            other => Err(anyhow!("expected an integer, found {other:?}")),
        }
    }
}
macro_rules! from_col_int {
    ($($t:ty),*) => {$(
        impl FromCol for $t {
            fn from_cell(c: CellRef<'_>) -> Result<Self> {
                let i = i64::from_cell(c)?;
                <$t>::try_from(i).map_err(|_| anyhow!("{i} is out of range for {}", stringify!($t)))
            }
        }
    )*};
}
from_col_int!(i32, u32, u64);
impl FromCol for bool {
    fn from_cell(c: CellRef<'_>) -> Result<Self> {
        Ok(i64::from_cell(c)? != 0)
    }
}
impl FromCol for f64 {
    fn from_cell(c: CellRef<'_>) -> Result<Self> {
        match c {
            CellRef::Real(f) => Ok(f),
            CellRef::Int(i) => Ok(i as f64),
            other => Err(anyhow!("expected a number, found {other:?}")),
        }
    }
}
impl FromCol for String {
    fn from_cell(c: CellRef<'_>) -> Result<Self> {
        match c {
            CellRef::Text(s) => Ok(s.to_string()),
            other => Err(anyhow!("expected text, found {other:?}")),
        }
    }
}
impl<T: FromCol> FromCol for Option<T> {
    fn from_cell(c: CellRef<'_>) -> Result<Self> {
        match c {
            CellRef::Null => Ok(None),
            c => T::from_cell(c).map(Some),
        }
    }
}

/// A result row of either database.
pub enum Row<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Pg(&'r postgres::Row),
}

impl Row<'_> {
    /// Column `i` as a `T`. A cell that cannot be one (text where a number
    /// belongs, an unknown status, an integer out of range) is a damaged
    /// store, bad input named by its column: whoever can write a store can
    /// put anything in it.
    pub fn get<T: FromCol>(&self, i: usize) -> Result<T> {
        self.with_cell(i, |c| T::from_cell(c).map_err(|e| self.damaged(i, e)))
    }

    /// The bad-input error for column `i` holding what it cannot: the
    /// column named, exit 2.
    pub fn damaged(&self, i: usize, e: impl std::fmt::Display) -> anyhow::Error {
        crate::error::bad(format!(
            "damaged store: column '{}' of a row: {e:#}",
            self.column_name(i)
        ))
    }

    /// The name of column `i`, as the query gave it.
    fn column_name(&self, i: usize) -> String {
        match self {
            Row::Sqlite(r) => r.as_ref().column_name(i).unwrap_or("?").to_string(),
            Row::Pg(r) => r.columns().get(i).map_or("?", |c| c.name()).to_string(),
        }
    }

    /// Column `i` handed to `f` without copying it (a metric's name is
    /// borrowed, not allocated, for each of an experiment's samples). A
    /// cell that is no cell sysdelta knows (text that is not UTF-8) is
    /// [`Row::damaged`]; what `f` returns is passed on as it is.
    pub fn with_cell<T>(&self, i: usize, f: impl FnOnce(CellRef<'_>) -> Result<T>) -> Result<T> {
        use rusqlite::types::ValueRef;
        let cell = match self {
            Row::Sqlite(r) => match r.get_ref(i).map_err(|e| self.damaged(i, e))? {
                ValueRef::Null => CellRef::Null,
                ValueRef::Integer(i) => CellRef::Int(i),
                ValueRef::Real(f) => CellRef::Real(f),
                ValueRef::Text(t) | ValueRef::Blob(t) => {
                    CellRef::Text(std::str::from_utf8(t).map_err(|e| self.damaged(i, e))?)
                }
            },
            Row::Pg(r) => r.try_get::<_, CellRef>(i).map_err(|e| self.damaged(i, e))?,
        };
        f(cell)
    }
}
