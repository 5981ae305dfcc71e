"""The JDBC catalog's tables and statements, as Paimon's JdbcCatalog lays them out (so Java opens the same catalog)."""

from __future__ import annotations

TABLES = "paimon_tables"
DATABASE_PROPERTIES = "paimon_database_properties"
TABLE_PROPERTIES = "paimon_table_properties"
LOCKS = "paimon_distributed_locks"

CREATE_TABLES = (
    f"CREATE TABLE {TABLES}(catalog_key VARCHAR(255) NOT NULL, database_name VARCHAR(255) NOT NULL, "
    "table_name VARCHAR(255) NOT NULL, PRIMARY KEY (catalog_key, database_name, table_name))"
)
CREATE_DATABASE_PROPERTIES = (
    f"CREATE TABLE {DATABASE_PROPERTIES}(catalog_key VARCHAR(255) NOT NULL, database_name VARCHAR(255) NOT NULL, "
    "property_key VARCHAR(255), property_value VARCHAR(1000), "
    "PRIMARY KEY (catalog_key, database_name, property_key))"
)
CREATE_TABLE_PROPERTIES = (
    f"CREATE TABLE {TABLE_PROPERTIES}(catalog_key VARCHAR(255) NOT NULL, database_name VARCHAR(255) NOT NULL, "
    "table_name VARCHAR(255) NOT NULL, property_key VARCHAR(255) NOT NULL, property_value VARCHAR(1000), "
    "PRIMARY KEY (catalog_key, database_name, table_name, property_key))"
)
# the same text for SQLite and PostgreSQL; {} is lock-key-max-length
CREATE_LOCKS = (
    f"CREATE TABLE {LOCKS}(lock_id VARCHAR({{}}) NOT NULL, "
    "acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL, "
    "expire_time_seconds BIGINT DEFAULT 0 NOT NULL, PRIMARY KEY (lock_id))"
)

# a database exists when it has a table or a property row (Paimon writes 'exists' and 'location')
DATABASE_IN_TABLES = f"SELECT 1 FROM {TABLES} WHERE catalog_key = ? AND database_name = ? LIMIT 1"
DATABASE_IN_PROPERTIES = (
    f"SELECT 1 FROM {DATABASE_PROPERTIES} WHERE catalog_key = ? AND database_name = ? LIMIT 1"
)
DATABASES = (
    f"SELECT database_name FROM {TABLES} WHERE catalog_key = ? "
    f"UNION SELECT database_name FROM {DATABASE_PROPERTIES} WHERE catalog_key = ?"
)
INSERT_DATABASE_PROPERTY = (
    f"INSERT INTO {DATABASE_PROPERTIES} (catalog_key, database_name, property_key, property_value) "
    "VALUES (?,?,?,?)"
)
DELETE_DATABASE_PROPERTIES = f"DELETE FROM {DATABASE_PROPERTIES} WHERE catalog_key = ? AND database_name = ?"
DELETE_DATABASE_TABLES = f"DELETE FROM {TABLES} WHERE catalog_key = ? AND database_name = ?"
DELETE_DATABASE_TABLE_PROPERTIES = (
    f"DELETE FROM {TABLE_PROPERTIES} WHERE catalog_key = ? AND database_name = ?"
)

TABLE_NAMES = f"SELECT table_name FROM {TABLES} WHERE catalog_key = ? AND database_name = ?"
TABLE_ROW = f"SELECT 1 FROM {TABLES} WHERE catalog_key = ? AND database_name = ? AND table_name = ?"
INSERT_TABLE = f"INSERT INTO {TABLES} (catalog_key, database_name, table_name) VALUES (?,?,?)"
DELETE_TABLE = f"DELETE FROM {TABLES} WHERE catalog_key = ? AND database_name = ? AND table_name = ?"
RENAME_TABLE = (
    f"UPDATE {TABLES} SET database_name = ?, table_name = ? "
    "WHERE catalog_key = ? AND database_name = ? AND table_name = ?"
)
INSERT_TABLE_PROPERTY = (
    f"INSERT INTO {TABLE_PROPERTIES} (catalog_key, database_name, table_name, property_key, property_value) "
    "VALUES (?,?,?,?,?)"
)
DELETE_TABLE_PROPERTIES = (
    f"DELETE FROM {TABLE_PROPERTIES} WHERE catalog_key = ? AND database_name = ? AND table_name = ?"
)
RENAME_TABLE_PROPERTIES = (
    f"UPDATE {TABLE_PROPERTIES} SET database_name = ?, table_name = ? "
    "WHERE catalog_key = ? AND database_name = ? AND table_name = ?"
)

# the distributed lock: a row per held lock; one older than its expiry may be taken over
LOCK_ACQUIRE = f"INSERT INTO {LOCKS} (lock_id, expire_time_seconds) VALUES (?,?)"
LOCK_RELEASE = f"DELETE FROM {LOCKS} WHERE lock_id = ?"
LOCK_EXPIRE_SQLITE = (
    f"DELETE FROM {LOCKS} WHERE strftime('%s', 'now') - strftime('%s', acquired_at) > expire_time_seconds "
    "AND lock_id = ?"
)
LOCK_EXPIRE_POSTGRESQL = (
    f"DELETE FROM {LOCKS} WHERE EXTRACT(EPOCH FROM AGE(NOW(), acquired_at)) > expire_time_seconds "
    "AND lock_id = ?"
)
