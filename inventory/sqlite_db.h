// A thin RAII layer over the SQLite C API: a connection, prepared statements cached by SQL text, and
// transactions. Errors come back as values with SQLite's message.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "composer/model/error.h"

namespace switchyard {

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}

  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }

  // Steps once: true while a row is available, false when done. Fails if any bind() failed.
  [[nodiscard]] Result<bool> step();
  // Runs to completion (for writes).
  [[nodiscard]] Result<void> run();
  [[nodiscard]] std::string text(int column) const;
  [[nodiscard]] std::int64_t integer(int column) const;
  void reset();

 private:
  Statement& noteBind(int rc, int index);

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  std::string bindError_;  // the first failed bind since the last reset
};

enum class Durability {
  kNormal,  // WAL + synchronous=NORMAL: survives process crashes (kill -9); the newest commits may be lost on power loss
  kFull,    // WAL + synchronous=FULL: fsync on every commit; survives power loss
};

class SqliteDb {
 public:
  [[nodiscard]] static Result<std::unique_ptr<SqliteDb>> open(const std::filesystem::path& path, Durability durability);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  [[nodiscard]] Result<void> exec(std::string_view sql);
  // A cached prepared statement, reset and ready to bind.
  [[nodiscard]] Result<Statement> prepare(const std::string& sql);
  [[nodiscard]] sqlite3* handle() const { return db_; }

 private:
  explicit SqliteDb(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

// BEGIN IMMEDIATE on construction, ROLLBACK on destruction unless commit() succeeded.
class Transaction {
 public:
  explicit Transaction(SqliteDb& db) : db_(db) {}
  [[nodiscard]] Result<void> begin() { return db_.exec("BEGIN IMMEDIATE"); }
  [[nodiscard]] Result<void> commit();
  ~Transaction();

 private:
  SqliteDb& db_;
  bool open_ = true;
};

}  // namespace switchyard
