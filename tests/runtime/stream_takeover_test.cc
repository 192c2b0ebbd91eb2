// A thread that waits for a stream runs the work the worker has not started
// (stream.h): order, failures and launches from inside that work.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/runtime/stream.h"
#include "test_util.h"

namespace kiln {
namespace {

using testing_util::Gate;

// What ran, in order, and on which thread.
struct Trace {
  std::mutex mutex;
  std::vector<std::string> names;
  std::vector<std::thread::id> threads;

  Stream::Work step(std::string name) {
    return [this, name] {
      std::lock_guard<std::mutex> lock(mutex);
      names.push_back(name);
      threads.push_back(std::this_thread::get_id());
      return Status();
    };
  }
};

// Leaves `stream`'s worker inside a work item, with `later` (the items
// enqueued by the caller next) in the same batch, so the worker must hand them
// back; the item finishes once `gate` opens.
void park_worker_with_batch(Stream& stream, Gate& first, Gate& gate, Trace& trace,
                            const std::vector<std::string>& later) {
  ASSERT_TRUE(first.hold(stream).ok());  // the worker takes this alone
  std::promise<void> started;
  std::shared_future<void> opened = gate.opened();
  ASSERT_TRUE(stream.enqueue("test::parked", [&trace, &started, opened] {
    trace.step("parked")();
    started.set_value();
    opened.wait();
    return Status();
  }).ok());
  for (const std::string& name : later) ASSERT_TRUE(stream.enqueue("test::step", trace.step(name)).ok());
  first.open();  // the worker now takes the parked item and `later` as one batch
  started.get_future().wait();
}

// Opens `gate` once the test's own thread is surely waiting in synchronize().
std::thread open_later(Gate& gate) {
  return std::thread([&gate] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    gate.open();
  });
}

TEST(StreamTakeover, WaitingThreadRunsWhatTheWorkerHasNotStarted) {
  Stream stream(0, 1, false);
  Gate first, gate;
  Trace trace;
  park_worker_with_batch(stream, first, gate, trace, {"b", "c"});
  std::thread opener = open_later(gate);
  ASSERT_TRUE(stream.synchronize().ok());
  opener.join();
  ASSERT_EQ(trace.names, (std::vector<std::string>{"parked", "b", "c"}));
  EXPECT_NE(trace.threads[0], std::this_thread::get_id());
  EXPECT_EQ(trace.threads[1], std::this_thread::get_id());
  EXPECT_EQ(trace.threads[2], std::this_thread::get_id());
  EXPECT_TRUE(stream.query());

  // The worker serves the stream again afterwards.
  std::promise<std::thread::id> ran_on;
  ASSERT_TRUE(stream.enqueue("test::after", [&ran_on] {
    ran_on.set_value(std::this_thread::get_id());
    return Status();
  }).ok());
  EXPECT_NE(ran_on.get_future().get(), std::this_thread::get_id());
  EXPECT_TRUE(stream.synchronize().ok());
}

TEST(StreamTakeover, RunSynchronouslyRunsItsWorkAfterTheRest) {
  Stream stream(0, 2, false);
  Gate first, gate;
  Trace trace;
  park_worker_with_batch(stream, first, gate, trace, {"b"});
  std::thread opener = open_later(gate);
  ASSERT_TRUE(stream.run_synchronously("test::copy", trace.step("copy")).ok());
  opener.join();
  ASSERT_EQ(trace.names, (std::vector<std::string>{"parked", "b", "copy"}));
  EXPECT_EQ(trace.threads[1], std::this_thread::get_id());
  EXPECT_EQ(trace.threads[2], std::this_thread::get_id());
}

TEST(StreamTakeover, FailureOfTakenWorkIsReturnedNamingTheOp) {
  Stream stream(0, 3, false);
  Gate first, gate;
  Trace trace;
  park_worker_with_batch(stream, first, gate, trace, {});
  ASSERT_TRUE(stream.enqueue("test::broken", [] { return internal_error("bad"); }).ok());
  ASSERT_TRUE(stream.enqueue("test::step", trace.step("after")).ok());
  std::thread opener = open_later(gate);
  Status status = stream.synchronize();
  opener.join();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("test::broken failed on kiln:0 stream 3: bad"), std::string::npos)
      << status.message();
  EXPECT_EQ(trace.names.back(), "after");  // later work still ran, as on the worker
  EXPECT_TRUE(stream.synchronize().ok());  // reported once
}

TEST(StreamTakeover, WorkLaunchedByTakenWorkRunsBeforeSynchronizeReturns) {
  Stream stream(0, 4, false);
  Gate first, gate;
  Trace trace;
  park_worker_with_batch(stream, first, gate, trace, {});
  // More launches than the queue holds: the thread running them must not
  // wait for room that only it can make.
  ASSERT_TRUE(stream.enqueue("test::launcher", [&stream, &trace] {
    for (size_t i = 0; i < Stream::kMaxQueued + 8; ++i) {
      Status status = stream.enqueue("test::step", trace.step("launched"));
      if (!status.ok()) return status;
    }
    return Status();
  }).ok());
  std::thread opener = open_later(gate);
  ASSERT_TRUE(stream.synchronize().ok());
  opener.join();
  EXPECT_EQ(trace.names.size(), 1 + Stream::kMaxQueued + 8);
  EXPECT_TRUE(stream.query());
}

TEST(StreamTakeover, TwoWaitingThreadsBothReturnWithTheStreamIdle) {
  Stream stream(0, 5, false);
  Gate first, gate;
  Trace trace;
  park_worker_with_batch(stream, first, gate, trace, {"b", "c", "d"});
  std::future<Status> other = std::async(std::launch::async, [&stream] { return stream.synchronize(); });
  std::thread opener = open_later(gate);
  ASSERT_TRUE(stream.synchronize().ok());
  ASSERT_TRUE(other.get().ok());
  opener.join();
  EXPECT_EQ(trace.names, (std::vector<std::string>{"parked", "b", "c", "d"}));
  EXPECT_TRUE(stream.query());
}

TEST(StreamTakeover, ThreadsEnqueuingAndWaitingAtOnceKeepEachThreadsOrder) {
  // Four threads enqueue onto one stream and wait on it now and then, so
  // takeovers, hand-backs and the worker interleave. Each thread's items
  // must run once each, in its order, and every wait must return.
  Stream stream(0, 7, false);
  constexpr int kThreads = 4;
  constexpr int kItems = 3000;
  std::mutex mutex;
  std::vector<std::vector<int>> ran(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kItems; ++i) {
        Status status = stream.enqueue("test::step", [&, t, i] {
          std::lock_guard<std::mutex> lock(mutex);
          ran[t].push_back(i);
          return Status();
        });
        ASSERT_TRUE(status.ok());
        if (i % (97 + 13 * t) == 0) {
          ASSERT_TRUE(stream.synchronize().ok());
        }
      }
      ASSERT_TRUE(stream.synchronize().ok());
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(ran[t].size(), static_cast<size_t>(kItems));
    for (int i = 0; i < kItems; ++i) ASSERT_EQ(ran[t][i], i);
  }
  EXPECT_TRUE(stream.query());
}

thread_local bool inside_caller_scope = false;

Status mark_caller_scope(void* work, Status (*run)(void* work)) {
  inside_caller_scope = true;
  Status status = run(work);
  inside_caller_scope = false;
  return status;
}

// Sets the scope for one test; the scope is process-wide.
class CallerScopeForTest {
 public:
  CallerScopeForTest() { Stream::set_caller_scope(&mark_caller_scope); }
  ~CallerScopeForTest() { Stream::set_caller_scope(nullptr); }
};

TEST(StreamTakeover, WorkRunOutsideTheWorkerRunsInTheCallerScope) {
  CallerScopeForTest scope;
  Stream stream(0, 6, false);
  std::vector<bool> inside;  // per item, in order
  auto record = [&inside] {
    inside.push_back(inside_caller_scope);
    return Status();
  };
  ASSERT_TRUE(stream.launch("test::inline", 8, record).ok());  // idle stream: runs here
  Gate first, gate;
  Trace trace;
  park_worker_with_batch(stream, first, gate, trace, {});
  ASSERT_TRUE(stream.enqueue("test::taken", record).ok());
  std::thread opener = open_later(gate);
  ASSERT_TRUE(stream.run_synchronously("test::copy", record).ok());
  opener.join();
  std::promise<bool> on_worker;
  ASSERT_TRUE(stream.enqueue("test::worker", [&on_worker] {
    on_worker.set_value(inside_caller_scope);
    return Status();
  }).ok());
  EXPECT_FALSE(on_worker.get_future().get());
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_EQ(inside, (std::vector<bool>{true, true, true}));
}

}  // namespace
}  // namespace kiln
