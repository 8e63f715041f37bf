#include "bench/queue.h"

#include <liburing.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "probes/io.h"

namespace diskprobe::bench {

std::string IoUringAvailable() {
  io_uring ring;
  int rc = io_uring_queue_init(4, &ring, 0);
  if (rc < 0) return std::string("io_uring refused by the kernel: ") + std::strerror(-rc);
  io_uring_queue_exit(&ring);
  return "";
}

QueueResult RunQueued(const QueueJob& job, std::mt19937_64& rng) {
  QueueResult r;
  io_uring ring;
  int rc = io_uring_queue_init(job.depth, &ring, 0);
  if (rc < 0) {
    r.unavailable = true;
    r.error = std::string("io_uring refused by the kernel: ") + std::strerror(-rc);
    return r;
  }
  std::uniform_int_distribution<std::uint64_t> pick(job.first_block, job.end_block - 1);
  probes::AlignedBuffer buffers(static_cast<std::size_t>(job.block_size) * job.depth, 4096);
  unsigned in_flight = 0;
  std::uint64_t submitted = 0;
  bool stop = false;
  auto submit_one = [&](unsigned slot) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    if (sqe == nullptr) return false;
    unsigned char* buf = buffers.data() + static_cast<std::size_t>(slot) * job.block_size;
    const std::uint64_t block = pick(rng);
    if (job.write) {
      if (job.fill) job.fill(buf, block);
      io_uring_prep_write(sqe, job.fd, buf, job.block_size, block * job.block_size);
    } else {
      io_uring_prep_read(sqe, job.fd, buf, job.block_size, block * job.block_size);
    }
    io_uring_sqe_set_data64(sqe, slot);
    ++submitted;
    ++in_flight;
    return true;
  };
  const std::int64_t t0 = probes::MonotonicNs();
  // The deadline holds for the first batch too: a phase whose share of the run is already spent
  // submits nothing (it used to run `depth` operations past the run's bound).
  if (t0 < job.deadline_ns)
    for (unsigned s = 0; s < job.depth && (job.max_ops == 0 || submitted < job.max_ops); ++s) submit_one(s);
  std::int64_t t_last = t0;
  while (in_flight > 0) {
    int n = io_uring_submit_and_wait(&ring, 1);
    if (n < 0 && n != -EINTR) {
      r.error = std::string("io_uring_submit_and_wait: ") + std::strerror(-n);
      break;
    }
    io_uring_cqe* cqe = nullptr;
    unsigned head, seen = 0;
    std::vector<unsigned> free_slots;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      --in_flight;
      const auto slot = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
      if (cqe->res != static_cast<int>(job.block_size)) {
        if (r.error.empty())
          r.error = cqe->res < 0 ? std::string(job.write ? "write: " : "read: ") + std::strerror(-cqe->res)
                                 : "short transfer";
        stop = true;
      } else {
        ++r.ops;
      }
      free_slots.push_back(slot);
    }
    io_uring_cq_advance(&ring, seen);
    t_last = probes::MonotonicNs();
    if (t_last >= job.deadline_ns) stop = true;
    for (unsigned slot : free_slots) {
      if (stop || (job.max_ops != 0 && submitted >= job.max_ops)) break;
      submit_one(slot);
    }
  }
  r.seconds = static_cast<double>(t_last - t0) / 1e9;
  io_uring_queue_exit(&ring);
  return r;
}

}  // namespace diskprobe::bench
