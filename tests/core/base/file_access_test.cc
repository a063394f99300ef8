// Which files a loader may open (file_access.cc): confined policies resolve symlinks and ".." before
// comparing with their roots, read only regular files up to their size cap, and fail with one message that
// names only the path as given; snapshots read each path once.
#include "proximity/core/base/file_access.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace proximity::core {
namespace {

namespace fs = std::filesystem;

// A fresh directory tree: allowed/{a.txt, sub/b.txt, link_out -> ../secret.txt, fifo}, secret.txt.
class FileAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("proximity_file_access_" + std::to_string(::getpid()) + "_" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "allowed" / "sub");
    Write(root_ / "allowed" / "a.txt", "alpha");
    Write(root_ / "allowed" / "sub" / "b.txt", std::string(100, 'b'));
    Write(root_ / "secret.txt", "secret");
    fs::create_symlink(root_ / "secret.txt", root_ / "allowed" / "link_out");
    fs::create_symlink(root_ / "allowed" / "a.txt", root_ / "link_in");
    ASSERT_EQ(::mkfifo((root_ / "allowed" / "fifo").c_str(), 0600), 0);
  }
  void TearDown() override { fs::remove_all(root_); }
  static void Write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }
  std::string P(const std::string& rel) const { return (root_ / rel).string(); }
  FileAccess Confined(int64_t max_bytes = 1 << 20) const {
    auto access = FileAccess::Confined({P("allowed")}, max_bytes);
    EXPECT_TRUE(access.ok()) << access.error().message;
    return access.value();
  }
  fs::path root_;
};

TEST_F(FileAccessTest, ConfinedReadsOnlyRegularFilesUnderItsRoots) {
  const FileAccess access = Confined();
  EXPECT_EQ(ReadFileUnder(access, P("allowed/a.txt")).value(), "alpha");
  EXPECT_EQ(ReadFileUnder(access, P("allowed/sub/../a.txt")).value(), "alpha");
  EXPECT_EQ(ReadFileUnder(access, P("allowed/sub/b.txt")).value().size(), 100u);
  EXPECT_TRUE(access.Allows(P("allowed/sub/b.txt")));
  // Outside the root: directly, through "..", through a symlink inside the root; a symlink outside the
  // root that points in is read as what it points to.
  for (const std::string rel : {"secret.txt", "allowed/../secret.txt", "allowed/link_out"}) {
    SCOPED_TRACE(rel);
    EXPECT_FALSE(access.Allows(P(rel)));
    const auto r = ReadFileUnder(access, P(rel));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
    EXPECT_NE(r.error().message.find(P(rel)), std::string::npos) << r.error().message;
    if (std::string(rel) != "secret.txt") {
      EXPECT_EQ(r.error().message.find(P("secret.txt")), std::string::npos)
          << "the message names the path as given, not what it resolves to: " << r.error().message;
    }
  }
  EXPECT_EQ(ReadFileUnder(access, P("link_in")).value(), "alpha");
  // Not regular files, and missing ones: the same kind of refusal, without blocking on the FIFO.
  for (const std::string rel : {"allowed/fifo", "allowed/sub", "allowed/missing.txt"}) {
    SCOPED_TRACE(rel);
    const auto r = ReadFileUnder(access, P(rel));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  }
}

TEST_F(FileAccessTest, SizeCapAndUnconfinedReasons) {
  const FileAccess small = Confined(10);
  EXPECT_TRUE(ReadFileUnder(small, P("allowed/a.txt")).ok());
  EXPECT_FALSE(ReadFileUnder(small, P("allowed/sub/b.txt")).ok()) << "100 bytes over a cap of 10";

  FileAccess any;
  EXPECT_TRUE(any.Allows(P("secret.txt")));
  EXPECT_EQ(ReadFileUnder(any, P("secret.txt")).value(), "secret");
  const auto dir = ReadFileUnder(any, P("allowed"));
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().message.find("director"), std::string::npos) << dir.error().message;
  const auto missing = ReadFileUnder(any, P("nothing_here"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find(P("nothing_here")), std::string::npos) << missing.error().message;
  any.max_bytes = 10;
  const auto big = ReadFileUnder(any, P("allowed/sub/b.txt"));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("100 bytes"), std::string::npos) << big.error().message;
  EXPECT_NE(big.error().message.find("limit of 10"), std::string::npos) << big.error().message;
}

TEST_F(FileAccessTest, RootsMustBeDirectories) {
  EXPECT_FALSE(FileAccess::Confined({P("allowed/a.txt")}, 1 << 20).ok());
  const auto missing = FileAccess::Confined({P("no_such_dir")}, 1 << 20);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no_such_dir"), std::string::npos) << missing.error().message;
}

TEST_F(FileAccessTest, ASnapshotReadsEachPathOnce) {
  FileAccess access = Confined();
  access.snapshot = std::make_shared<FileSnapshot>();
  EXPECT_EQ(ReadFileUnder(access, P("allowed/a.txt")).value(), "alpha");
  Write(root_ / "allowed" / "a.txt", "changed");
  EXPECT_EQ(ReadFileUnder(access, P("allowed/a.txt")).value(), "alpha") << "the first read's bytes";
  access.snapshot = std::make_shared<FileSnapshot>();
  EXPECT_EQ(ReadFileUnder(access, P("allowed/a.txt")).value(), "changed");
}

}  // namespace
}  // namespace proximity::core
