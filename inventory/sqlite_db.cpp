#include "inventory/sqlite_db.h"

#include <fmt/format.h>

namespace switchyard {

Statement& Statement::noteBind(int rc, int index) {
  if (rc != SQLITE_OK && bindError_.empty())
    bindError_ = fmt::format("sqlite: cannot bind parameter {}: {} in: {}", index, sqlite3_errstr(rc), sqlite3_sql(stmt_));
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  return noteBind(sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT), index);
}

Statement& Statement::bind(int index, std::int64_t value) { return noteBind(sqlite3_bind_int64(stmt_, index, value), index); }

Result<bool> Statement::step() {
  // A parameter that did not bind would run the statement with NULL in its place: refuse instead.
  if (!bindError_.empty()) return fail(Code::kInternal, bindError_);
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return fail(rc == SQLITE_BUSY ? Code::kUnavailable : Code::kInternal,
              fmt::format("sqlite: {}", sqlite3_errmsg(db_)));
}

Result<void> Statement::run() {
  auto r = step();
  reset();
  if (!r) return fail(r.error());
  return {};
}

std::string Statement::text(int column) const {
  const auto* p = sqlite3_column_text(stmt_, column);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)))
           : std::string();
}

std::int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }

void Statement::reset() {
  bindError_.clear();
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::open(const std::filesystem::path& path, Durability durability) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<SqliteDb> db(new SqliteDb(raw));
  if (rc != SQLITE_OK)
    return fail(Code::kUnavailable, fmt::format("{}: cannot open database: {}", path.string(), raw ? sqlite3_errmsg(raw) : "out of memory"));
  sqlite3_busy_timeout(raw, 5000);
  const char* sync = durability == Durability::kFull ? "FULL" : "NORMAL";
  for (const std::string& pragma : {std::string("PRAGMA journal_mode=WAL"), fmt::format("PRAGMA synchronous={}", sync),
                                    std::string("PRAGMA foreign_keys=ON")}) {
    if (auto r = db->exec(pragma); !r) return fail(r.error().wrap(path.string()));
  }
  return db;
}

SqliteDb::~SqliteDb() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close(db_);
}

Result<void> SqliteDb::exec(std::string_view sql) {
  char* message = nullptr;
  const std::string owned(sql);
  if (sqlite3_exec(db_, owned.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : "unknown error";
    sqlite3_free(message);
    return fail(Code::kInternal, fmt::format("sqlite: {}", text));
  }
  return {};
}

Result<Statement> SqliteDb::prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK)
      return fail(Code::kInternal, fmt::format("sqlite: {} in: {}", sqlite3_errmsg(db_), sql));
    it = cache_.emplace(sql, stmt).first;
  }
  Statement s(db_, it->second);
  s.reset();
  return s;
}

Result<void> Transaction::commit() {
  auto r = db_.exec("COMMIT");
  if (r) open_ = false;
  return r;
}

Transaction::~Transaction() {
  if (open_) (void)db_.exec("ROLLBACK");
}

}  // namespace switchyard
