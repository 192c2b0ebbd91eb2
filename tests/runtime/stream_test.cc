#include "kiln/runtime/stream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "test_util.h"

namespace kiln {
namespace {

using testing_util::busy_work;
using testing_util::Gate;
using testing_util::ready_within;

TEST(Stream, KnowsItsDeviceAndId) {
  Stream stream(3, 7, false);
  EXPECT_EQ(stream.device(), 3);
  EXPECT_EQ(stream.id(), 7);
}

TEST(Stream, FreshStreamIsIdleAndSynchronizes) {
  Stream stream(0, 1, false);
  EXPECT_TRUE(stream.query());
  EXPECT_TRUE(stream.synchronize().ok());
}

TEST(Stream, RunsWorkInOrder) {
  Stream stream(0, 1, false);
  constexpr int kItems = 5000;
  std::vector<int> order;  // touched only by the worker until synchronize()
  order.reserve(kItems);
  for (int i = 0; i < kItems; ++i) {
    ASSERT_TRUE(stream.enqueue("test::append", [&order, i] {
      order.push_back(i);
      return Status();
    }).ok());
  }
  ASSERT_TRUE(stream.synchronize().ok());
  ASSERT_EQ(order.size(), static_cast<size_t>(kItems));
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(order[i], i);
}

TEST(Stream, RunsWorkOnAWorkerThread) {
  Stream stream(0, 1, false);
  std::promise<std::thread::id> ran_on;
  ASSERT_TRUE(stream.enqueue("test::where", [&] {
    ran_on.set_value(std::this_thread::get_id());
    return Status();
  }).ok());
  // Waited for without synchronize(), which would run queued work itself.
  EXPECT_NE(ran_on.get_future().get(), std::this_thread::get_id());
  ASSERT_TRUE(stream.synchronize().ok());
}

TEST(Stream, EnqueueReturnsBeforeTheWorkRuns) {
  Stream stream(0, 1, false);
  Gate gate;
  std::atomic<bool> ran{false};
  ASSERT_TRUE(gate.hold(stream).ok());
  ASSERT_TRUE(stream.enqueue("test::flag", [&] {
    ran = true;
    return Status();
  }).ok());
  EXPECT_FALSE(ran.load());  // still behind the gate
  EXPECT_FALSE(stream.query());
  gate.open();
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_TRUE(ran.load());
}

TEST(Stream, SynchronizeWaitsForAllQueuedWork) {
  Stream stream(0, 1, false);
  std::atomic<int> done{0};
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(stream.enqueue("test::slow", [&] {
      busy_work(std::chrono::milliseconds(4));
      done.fetch_add(1);
      return Status();
    }).ok());
  }
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_EQ(done.load(), 5);
  EXPECT_TRUE(stream.query());
}

TEST(Stream, WorkLaunchedAfterStopPollingStillRuns) {
  // stop_polling() sends a polling worker to sleep: a launch at any moment
  // around it, while the worker polls or falls asleep, must still wake it.
  Stream stream(0, 1, false);
  std::atomic<int> done{0};
  for (int round = 0; round < 200; ++round) {
    ASSERT_TRUE(stream.enqueue("test::count", [&] {
      done.fetch_add(1);
      return Status();
    }).ok());
    ASSERT_TRUE(stream.synchronize().ok());  // the worker now polls for the next launch
    stream.stop_polling();
    if (round % 2 == 1) std::this_thread::sleep_for(std::chrono::microseconds(round % 7 * 10));
    auto ran = std::make_shared<std::promise<void>>();
    std::future<void> ran_future = ran->get_future();
    ASSERT_TRUE(stream.enqueue("test::count", [&done, ran] {
      done.fetch_add(1);
      ran->set_value();
      return Status();
    }).ok());
    ASSERT_TRUE(ready_within(ran_future, std::chrono::milliseconds(5000))) << "round " << round;
  }
  EXPECT_EQ(done.load(), 400);
}

TEST(Stream, SynchronizeBlocksWhileWorkIsHeld) {
  Stream stream(0, 1, false);
  Gate gate;
  ASSERT_TRUE(gate.hold(stream).ok());
  std::future<Status> sync = std::async(std::launch::async, [&] { return stream.synchronize(); });
  EXPECT_FALSE(ready_within(sync, std::chrono::milliseconds(20)));
  gate.open();
  EXPECT_TRUE(sync.get().ok());
}

TEST(Stream, QueryReflectsPendingWork) {
  Stream stream(0, 1, false);
  Gate gate;
  EXPECT_TRUE(stream.query());
  ASSERT_TRUE(gate.hold(stream).ok());
  EXPECT_FALSE(stream.query());
  ASSERT_TRUE(stream.enqueue("test::noop", [] { return Status(); }).ok());
  EXPECT_FALSE(stream.query());
  gate.open();
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_TRUE(stream.query());
}

TEST(Stream, CountsSubmittedAndCompletedWorkInOrder) {
  Stream stream(0, 1, false);
  Gate gate;
  EXPECT_EQ(stream.submitted(), 0u);
  EXPECT_TRUE(stream.completed(0));
  ASSERT_TRUE(gate.hold(stream).ok());
  ASSERT_TRUE(stream.enqueue("test::noop", [] { return Status(); }).ok());
  EXPECT_EQ(stream.submitted(), 2u);
  EXPECT_FALSE(stream.completed(1));
  gate.open();
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_TRUE(stream.completed(2));
  EXPECT_FALSE(stream.completed(3));
  // Work run at once in the caller is not counted: it has run on return.
  ASSERT_TRUE(stream.launch("test::inline", 0, [] { return Status(); }).ok());
  EXPECT_EQ(stream.submitted(), 2u);
}

TEST(Stream, CountsOrderingPointsButNotMarkers) {
  Stream stream(0, 1, false);
  auto noop = [] { return Status(); };
  EXPECT_EQ(stream.ordering_points(), 0u);
  ASSERT_TRUE(stream.launch("test::inline", 0, noop).ok());  // idle: runs in the caller
  Status status;
  EXPECT_TRUE(stream.run_inline_if_idle("test::inline", 0, noop, status));
  ASSERT_TRUE(stream.run_synchronously("test::sync", noop).ok());
  EXPECT_EQ(stream.ordering_points(), 3u);
  Gate gate;
  ASSERT_TRUE(gate.hold(stream).ok());  // an enqueue
  EXPECT_FALSE(stream.run_inline_if_idle("test::busy", 0, noop, status));  // ran nothing
  ASSERT_TRUE(stream.launch("test::queued", 0, noop).ok());
  ASSERT_TRUE(stream.enqueue_without_waiting("test::marker", noop).ok());
  EXPECT_EQ(stream.ordering_points(), 5u);
  gate.open();
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_EQ(stream.ordering_points(), 6u);
  stream.wait_for_queued_work();
  EXPECT_TRUE(stream.query());
  EXPECT_EQ(stream.ordering_points(), 8u);
}

TEST(Stream, WaitForQueuedWorkRunsItButLeavesAFailureForSynchronize) {
  Stream stream(0, 1, false);
  Gate gate;
  ASSERT_TRUE(gate.hold(stream).ok());
  ASSERT_TRUE(stream.enqueue("test::fails", [] { return internal_error("boom"); }).ok());
  std::future<void> waited = std::async(std::launch::async, [&] { stream.wait_for_queued_work(); });
  EXPECT_FALSE(ready_within(waited, std::chrono::milliseconds(30)));
  gate.open();
  waited.get();
  EXPECT_TRUE(stream.completed(2));
  Status failure = stream.synchronize();
  EXPECT_FALSE(failure.ok());
  EXPECT_NE(failure.message().find("boom"), std::string::npos);
}

TEST(Stream, FailureSurfacesAtSynchronizeAndTheStreamStaysUsable) {
  Stream stream(2, 5, false);
  std::atomic<bool> later_ran{false};
  ASSERT_TRUE(stream.enqueue("aten::add.Tensor", [] { return Status(); }).ok());
  // enqueue itself succeeds: the failure is only known when the work runs.
  ASSERT_TRUE(stream.enqueue("aten::bad_op", [] {
    return invalid_argument("shapes do not match");
  }).ok());
  ASSERT_TRUE(stream.enqueue("test::later", [&] {
    later_ran = true;
    return Status();
  }).ok());
  Status status = stream.synchronize();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("aten::bad_op"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("shapes do not match"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("kiln:2"), std::string::npos) << status.message();
  EXPECT_TRUE(later_ran.load());  // work after the failure still ran

  // The failure was cleared; the stream keeps working.
  EXPECT_TRUE(stream.synchronize().ok());
  std::atomic<bool> after{false};
  ASSERT_TRUE(stream.enqueue("test::after", [&] {
    after = true;
    return Status();
  }).ok());
  EXPECT_TRUE(stream.synchronize().ok());
  EXPECT_TRUE(after.load());
}

TEST(Stream, KeepsTheFirstFailure) {
  Stream stream(0, 1, false);
  ASSERT_TRUE(stream.enqueue("op::first", [] { return out_of_memory("first cause"); }).ok());
  ASSERT_TRUE(stream.enqueue("op::second", [] { return internal_error("second"); }).ok());
  Status status = stream.synchronize();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kOutOfMemory);
  EXPECT_NE(status.message().find("op::first"), std::string::npos);
  EXPECT_EQ(status.message().find("op::second"), std::string::npos);
  EXPECT_TRUE(stream.synchronize().ok());
}

TEST(Stream, ExceptionInWorkBecomesAnErrorStatus) {
  Stream stream(0, 1, false);
  ASSERT_TRUE(stream.enqueue("test::throws", []() -> Status {
    throw std::runtime_error("kaboom");
  }).ok());
  Status status = stream.synchronize();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_NE(status.message().find("kaboom"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("test::throws"), std::string::npos) << status.message();

  ASSERT_TRUE(stream.enqueue("test::throws_int", []() -> Status { throw 42; }).ok());
  status = stream.synchronize();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInternal);

  // The worker survived.
  std::atomic<bool> ran{false};
  ASSERT_TRUE(stream.enqueue("test::after", [&] {
    ran = true;
    return Status();
  }).ok());
  EXPECT_TRUE(stream.synchronize().ok());
  EXPECT_TRUE(ran.load());
}

TEST(Stream, RunSynchronouslyRunsAfterQueuedWork) {
  Stream stream(0, 1, false);
  Gate gate;
  std::vector<int> order;
  ASSERT_TRUE(gate.hold(stream).ok());
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(stream.enqueue("test::append", [&order, i] {
      order.push_back(i);
      return Status();
    }).ok());
  }
  std::future<Status> result = std::async(std::launch::async, [&] {
    return stream.run_synchronously("test::check", [&] {
      order.push_back(-1);
      return Status();
    });
  });
  EXPECT_FALSE(ready_within(result, std::chrono::milliseconds(20)));
  gate.open();
  ASSERT_TRUE(result.get().ok());
  ASSERT_EQ(order.size(), 101u);
  EXPECT_EQ(order.back(), -1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  EXPECT_TRUE(stream.query());
}

TEST(Stream, RunSynchronouslyReturnsTheWorksStatus) {
  Stream stream(1, 4, false);
  EXPECT_TRUE(stream.run_synchronously("test::ok", [] { return Status(); }).ok());
  Status status = stream.run_synchronously("aten::copy_", [] {
    return out_of_range("index 9 is out of bounds");
  });
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_NE(status.message().find("aten::copy_"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("index 9 is out of bounds"), std::string::npos);
  // A synchronous failure is reported once, to its caller, not again later.
  EXPECT_TRUE(stream.synchronize().ok());
  Status thrown = stream.run_synchronously("test::throws", []() -> Status {
    throw std::logic_error("bad logic");
  });
  EXPECT_EQ(thrown.code(), StatusCode::kInternal);
  EXPECT_NE(thrown.message().find("bad logic"), std::string::npos);
}

TEST(Stream, RunSynchronouslyOnAnIdleStreamRunsInTheCaller) {
  Stream stream(0, 1, false);
  std::thread::id ran_on;
  ASSERT_TRUE(stream.run_synchronously("test::where", [&] {
    ran_on = std::this_thread::get_id();
    return Status();
  }).ok());
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(Stream, RunSynchronouslyReportsAnEarlierQueuedFailure) {
  Stream stream(0, 1, false);
  ASSERT_TRUE(stream.enqueue("aten::earlier", [] { return internal_error("broken"); }).ok());
  Status status = stream.run_synchronously("test::copy", [] { return Status(); });
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("aten::earlier"), std::string::npos) << status.message();
  // Reported once.
  EXPECT_TRUE(stream.synchronize().ok());
}

TEST(Stream, WorkQueuedDuringRunSynchronouslyRunsAfterIt) {
  Stream stream(0, 1, false);
  std::vector<int> order;
  std::mutex mutex;
  auto note = [&](int value) {
    std::lock_guard<std::mutex> lock(mutex);
    order.push_back(value);
  };
  ASSERT_TRUE(stream.run_synchronously("test::outer", [&] {
    // Another thread queues work while the caller runs synchronous work.
    std::thread other([&] {
      EXPECT_TRUE(stream.enqueue("test::queued", [&] {
        note(2);
        return Status();
      }).ok());
    });
    other.join();
    busy_work(std::chrono::milliseconds(5));
    note(1);
    return Status();
  }).ok());
  ASSERT_TRUE(stream.synchronize().ok());
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], 1);
  EXPECT_EQ(order[1], 2);
}

TEST(Stream, BlockingStreamRunsInlineAndReportsFailureDirectly) {
  Stream stream(0, 0, /*blocking=*/true);
  std::thread::id ran_on;
  bool ran = false;
  ASSERT_TRUE(stream.enqueue("test::inline", [&] {
    ran = true;
    ran_on = std::this_thread::get_id();
    return Status();
  }).ok());
  EXPECT_TRUE(ran);  // done before enqueue returned
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(stream.query());

  Status status = stream.enqueue("aten::bad_op", [] { return invalid_argument("nope"); });
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("aten::bad_op"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("nope"), std::string::npos);
  // Reported once, directly: synchronize has nothing more to say.
  EXPECT_TRUE(stream.synchronize().ok());

  Status thrown = stream.enqueue("test::throws", []() -> Status {
    throw std::runtime_error("inline kaboom");
  });
  EXPECT_EQ(thrown.code(), StatusCode::kInternal);
  EXPECT_NE(thrown.message().find("inline kaboom"), std::string::npos);
  // Still usable.
  bool after = false;
  EXPECT_TRUE(stream.enqueue("test::after", [&] {
    after = true;
    return Status();
  }).ok());
  EXPECT_TRUE(after);
}

TEST(Stream, DestructorFinishesQueuedWork) {
  std::atomic<int> count{0};
  Gate gate;
  {
    Stream stream(0, 1, false);
    ASSERT_TRUE(gate.hold(stream).ok());
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(stream.enqueue("test::count", [&] {
        count.fetch_add(1);
        return Status();
      }).ok());
    }
    gate.open();
  }
  EXPECT_EQ(count.load(), 200);
}

TEST(Stream, ConcurrentProducersLoseNoWork) {
  Stream stream(0, 1, false);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  std::vector<std::vector<int>> seen(kThreads);  // worker only
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_TRUE(stream.enqueue("test::produce", [&seen, t, i] {
          seen[t].push_back(i);
          return Status();
        }).ok());
      }
    });
  }
  for (std::thread& producer : producers) producer.join();
  ASSERT_TRUE(stream.synchronize().ok());
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(seen[t].size(), static_cast<size_t>(kPerThread));
    // Each producer's items ran in the order it queued them.
    for (int i = 0; i < kPerThread; ++i) ASSERT_EQ(seen[t][i], i);
  }
}

TEST(Stream, WorkMayEnqueueOntoAnotherStream) {
  Stream first(0, 1, false);
  Stream second(0, 2, false);
  std::atomic<bool> ran{false};
  ASSERT_TRUE(first.enqueue("test::forward", [&] {
    return second.enqueue("test::target", [&] {
      ran = true;
      return Status();
    });
  }).ok());
  ASSERT_TRUE(first.synchronize().ok());
  ASSERT_TRUE(second.synchronize().ok());
  EXPECT_TRUE(ran.load());
}

TEST(Stream, CapturedStateIsReleasedOnceTheWorkHasRun) {
  Stream stream(0, 1, false);
  auto resource = std::make_shared<int>(5);
  std::weak_ptr<int> watch = resource;
  ASSERT_TRUE(stream.enqueue("test::capture", [resource = std::move(resource)] {
    return *resource == 5 ? Status() : internal_error("lost");
  }).ok());
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_TRUE(watch.expired());
}

// Queues, behind everything else on `stream`, work that waits for `gate`, and
// returns once the worker has started it: from then on the queue is empty and
// nothing queued runs until the gate opens.
void occupy_worker(Stream& stream, const Gate& gate) {
  auto started = std::make_shared<std::promise<void>>();
  std::future<void> running = started->get_future();
  ASSERT_TRUE(stream.enqueue("test::occupy", [started, opened = gate.opened()] {
    started->set_value();
    opened.wait();
    return Status();
  }).ok());
  running.wait();
}

// occupy_worker(), then kMaxQueued items queued behind it: the next enqueue
// that may wait would wait.
void fill_to_the_bound(Stream& stream, const Gate& gate) {
  occupy_worker(stream, gate);
  for (size_t i = 0; i < Stream::kMaxQueued; ++i) {
    ASSERT_TRUE(stream.enqueue("test::nothing", [] { return Status(); }).ok());
  }
}

TEST(StreamBackPressure, EnqueueWaitsWhileTheQueueIsFullAndResumesInOrder) {
  Stream stream(0, 1, false);
  Gate gate;
  occupy_worker(stream, gate);
  constexpr int kItems = static_cast<int>(Stream::kMaxQueued) + 1;
  std::vector<int> order;  // touched only by the worker until synchronize()
  order.reserve(kItems);
  std::atomic<int> enqueued{0};
  std::future<void> producer = std::async(std::launch::async, [&] {
    for (int i = 0; i < kItems; ++i) {
      ASSERT_TRUE(stream.enqueue("test::append", [&order, i] {
        order.push_back(i);
        return Status();
      }).ok());
      enqueued = i + 1;
    }
  });
  // The last enqueue finds kMaxQueued items waiting and waits itself.
  EXPECT_FALSE(ready_within(producer, std::chrono::milliseconds(200)));
  EXPECT_EQ(enqueued.load(), kItems - 1);
  gate.open();
  producer.get();
  ASSERT_TRUE(stream.synchronize().ok());
  ASSERT_EQ(order.size(), static_cast<size_t>(kItems));
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(order[i], i);
}

bool refuse_to_wait() { return false; }

TEST(StreamBackPressure, ThreadsTheWaitPermissionRefusesEnqueuePastTheBound) {
  Stream stream(0, 1, false);
  Gate gate;
  occupy_worker(stream, gate);
  Stream::set_wait_permission(&refuse_to_wait);
  std::atomic<int> ran{0};
  std::future<void> producer = std::async(std::launch::async, [&] {
    for (size_t i = 0; i < Stream::kMaxQueued + 10; ++i) {
      ASSERT_TRUE(stream.enqueue("test::count", [&ran] {
        ++ran;
        return Status();
      }).ok());
    }
  });
  const bool returned = ready_within(producer, std::chrono::seconds(10));
  Stream::set_wait_permission(nullptr);
  gate.open();
  EXPECT_TRUE(returned);
  producer.get();
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_EQ(ran.load(), static_cast<int>(Stream::kMaxQueued + 10));
}

TEST(StreamBackPressure, AStreamWorkerEnqueuesOntoAFullStreamWithoutWaiting) {
  Stream full(0, 1, false);
  Stream other(0, 2, false);
  Gate gate;
  fill_to_the_bound(full, gate);
  auto forwarded = std::make_shared<std::promise<void>>();
  std::future<void> done = forwarded->get_future();
  ASSERT_TRUE(other.enqueue("test::forward", [&full, forwarded] {
    Status status = full.enqueue("test::nothing", [] { return Status(); });
    forwarded->set_value();
    return status;
  }).ok());
  EXPECT_TRUE(ready_within(done, std::chrono::seconds(10)));
  gate.open();
  ASSERT_TRUE(other.synchronize().ok());
  ASSERT_TRUE(full.synchronize().ok());
}

TEST(StreamBackPressure, EventMarkersNeverWait) {
  Stream stream(0, 1, false);
  Gate gate;
  fill_to_the_bound(stream, gate);
  std::future<Status> marker = std::async(std::launch::async, [&] {
    return stream.enqueue_without_waiting("test::marker", [] { return Status(); });
  });
  EXPECT_TRUE(ready_within(marker, std::chrono::seconds(10)));
  gate.open();
  EXPECT_TRUE(marker.get().ok());
  ASSERT_TRUE(stream.synchronize().ok());
}

TEST(StreamLaunch, SmallWorkOnAnIdleStreamRunsBeforeLaunchReturns) {
  Stream stream(0, 1, false);
  std::thread::id ran_on;
  ASSERT_TRUE(stream.launch("test::small", 64, [&ran_on] {
    ran_on = std::this_thread::get_id();
    return Status();
  }).ok());
  EXPECT_EQ(ran_on, std::this_thread::get_id());  // no hand-off, no wait needed
}

TEST(StreamLaunch, SmallWorkBehindQueuedWorkKeepsStreamOrder) {
  Stream stream(0, 1, false);
  Gate gate;
  ASSERT_TRUE(gate.hold(stream).ok());
  std::atomic<bool> ran{false};
  ASSERT_TRUE(stream.launch("test::small", 64, [&ran] {
    ran = true;
    return Status();
  }).ok());
  EXPECT_FALSE(ran.load());  // queued behind the gate, not run in the caller
  gate.open();
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_TRUE(ran.load());
}

TEST(StreamLaunch, LargeWorkIsQueued) {
  Stream stream(0, 1, false);
  std::promise<std::thread::id> ran_on;
  ASSERT_TRUE(stream.launch("test::large", Stream::kInlineLaunchBytes + 1, [&ran_on] {
    ran_on.set_value(std::this_thread::get_id());
    return Status();
  }).ok());
  EXPECT_NE(ran_on.get_future().get(), std::this_thread::get_id());  // before synchronize()
  ASSERT_TRUE(stream.synchronize().ok());
}

TEST(StreamLaunch, InlineFailureIsReturnedNamingTheOp) {
  Stream stream(0, 4, false);
  Status status = stream.launch("test::broken", 8, [] { return internal_error("bad"); });
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("test::broken failed on kiln:0 stream 4: bad"),
            std::string::npos);
  EXPECT_TRUE(stream.synchronize().ok());  // nothing left pending
}

TEST(StreamLaunch, InlineExceptionBecomesAStatus) {
  Stream stream(0, 1, false);
  Status status = stream.launch("test::throws", 8, []() -> Status {
    throw std::runtime_error("thrown");
  });
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("thrown"), std::string::npos);
}


TEST(StreamInlineRegion, HoldsAnIdleStreamAndRunsEveryLaunchInTheCaller) {
  Stream stream(0, 1, false);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::thread::id> ran_on;
  {
    Stream::InlineRegion region(stream);
    ASSERT_TRUE(region.held());
    EXPECT_FALSE(stream.query());  // held: busy for everyone else
    // Large work, a plain enqueue and a synchronous run all run at once, in order.
    ASSERT_TRUE(stream.launch("test::large", size_t{1} << 30, [&] {
      ran_on.push_back(std::this_thread::get_id());
      return Status();
    }).ok());
    ASSERT_TRUE(stream.enqueue("test::queued", [&] {
      ran_on.push_back(std::this_thread::get_id());
      return Status();
    }).ok());
    ASSERT_EQ(ran_on.size(), 2u);
    ASSERT_TRUE(stream.run_synchronously("test::sync", [&] {
      ran_on.push_back(std::this_thread::get_id());
      return Status();
    }).ok());
    EXPECT_TRUE(stream.synchronize().ok());  // returns at once: nothing of this thread is pending
  }
  EXPECT_EQ(ran_on, (std::vector<std::thread::id>{caller, caller, caller}));
  EXPECT_TRUE(stream.query());
}

TEST(StreamInlineRegion, IsNotHeldOnABusyStream) {
  Stream stream(0, 1, false);
  Gate gate;
  ASSERT_TRUE(stream.enqueue("test::held", [&] {
    gate.wait();
    return Status();
  }).ok());
  std::atomic<bool> ran{false};
  {
    Stream::InlineRegion region(stream);
    EXPECT_FALSE(region.held());
    // Launches queue behind the held work, as without a region.
    ASSERT_TRUE(stream.launch("test::after", 0, [&] {
      ran = true;
      return Status();
    }).ok());
    EXPECT_FALSE(ran.load());
  }
  gate.open();
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_TRUE(ran.load());
}

TEST(StreamInlineRegion, WorkOfOtherThreadsWaitsForTheRegion) {
  Stream stream(0, 1, false);
  std::vector<int> order;
  std::mutex order_mutex;
  auto note = [&](int value) {
    std::lock_guard<std::mutex> lock(order_mutex);
    order.push_back(value);
  };
  {
    Stream::InlineRegion region(stream);
    ASSERT_TRUE(region.held());
    std::thread other([&] {
      ASSERT_TRUE(stream.enqueue("test::other", [&] {
        note(2);
        return Status();
      }).ok());
    });
    other.join();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the worker must not take it meanwhile
    ASSERT_TRUE(stream.launch("test::mine", 0, [&] {
      note(1);
      return Status();
    }).ok());
  }
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(StreamInlineRegion, FailureInsideIsReturnedAtTheLaunchNamingTheOp) {
  Stream stream(0, 1, false);
  {
    Stream::InlineRegion region(stream);
    ASSERT_TRUE(region.held());
    Status status = stream.launch("test::broken", size_t{1} << 30, [] { return internal_error("no good"); });
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.message().find("test::broken"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("no good"), std::string::npos) << status.message();
  }
  EXPECT_TRUE(stream.synchronize().ok());  // nothing deferred: the stream is clean
}

TEST(StreamInlineRegion, OneRegionPerThread) {
  Stream first(0, 1, false), second(0, 2, false);
  Stream::InlineRegion outer(first);
  ASSERT_TRUE(outer.held());
  {
    Stream::InlineRegion inner(second);
    EXPECT_FALSE(inner.held());
    Stream::InlineRegion again(first);
    EXPECT_FALSE(again.held());
  }
  EXPECT_FALSE(first.query());  // still held by `outer`
}

}  // namespace
}  // namespace kiln
