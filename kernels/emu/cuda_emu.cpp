// Host emulation of the CUDA execution model: fibers, barriers, warp exchange,
// runtime shims. See kernels/emu/cuda_emu.h for the model it implements.
#include "kernels/emu/cuda_emu.h"

#include <sys/mman.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ORACLE_EMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ORACLE_EMU_ASAN 1
#endif
// Context switch: a few lines of assembly on x86-64 (tens of ns per switch);
// ucontext elsewhere and under AddressSanitizer (which intercepts swapcontext).
#if defined(__x86_64__) && !defined(ORACLE_EMU_ASAN)
#define ORACLE_EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

namespace emu {

thread_local ThreadIndex g_index;

namespace {

[[noreturn]] void fatal(const char* what) {
  std::fprintf(stderr, "cuda_emu: %s\n", what);
  std::abort();
}

// ---- context switching ------------------------------------------------------------
#ifdef ORACLE_EMU_ASM_SWITCH
extern "C" void oracle_emu_switch(void** save_sp, void* load_sp);
extern "C" void oracle_emu_trampoline();
// Saves the callee-saved registers on the current stack, stores the stack
// pointer in *save_sp, loads load_sp and restores. MXCSR and the x87 control
// word are not switched: every fiber shares the OS thread's floating-point
// environment (kernels never change rounding modes), and ldmxcsr/fldcw are
// the slowest part of a switch.
asm(R"(
  .text
  .p2align 4
  .type oracle_emu_switch,@function
oracle_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size oracle_emu_switch,.-oracle_emu_switch
  .p2align 4
  .type oracle_emu_trampoline,@function
oracle_emu_trampoline:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size oracle_emu_trampoline,.-oracle_emu_trampoline
)");
#endif

constexpr size_t kStackBytes = 256 * 1024;

struct Fiber;
void fiber_main(Fiber* f);

enum class Wait { None, Block, Warp };

struct Fiber {
  uint3 tid;
  int warp = 0, lane = 0;
  bool done = false;
  Wait wait = Wait::None;
  uint64_t wait_gen = 0;
  int parity = 0;       // which of the warp's two exchange buffers the next exchange uses
  char* stack = nullptr;  // kStackBytes, mmap'd once and reused
#ifdef ORACLE_EMU_ASM_SWITCH
  void* sp = nullptr;
#else
  ucontext_t ctx;
#endif
};

struct WarpState {
  int live = 0, arrived = 0;
  unsigned live_mask = 0;
  uint64_t gen = 0;
  uint64_t slots[2][32] = {};
  unsigned deposited[2] = {0, 0};  // lanes that wrote each buffer in its latest exchange
};

// Everything about the block that is running on this OS thread.
struct Emulator {
  std::vector<Fiber> fibers;  // (threads per block) — stacks kept across launches
  std::vector<WarpState> warps;
  int block_live = 0, block_arrived = 0;
  uint64_t block_gen = 0;
  Fiber* current = nullptr;  // null on the fast path and in the scheduler
  std::vector<unsigned char> dynamic_shared;
  KernelThunk thunk = nullptr;
  void* closure = nullptr;
#ifdef ORACLE_EMU_ASM_SWITCH
  void* sched_sp = nullptr;
#else
  ucontext_t sched_ctx;
#endif
  ~Emulator() {
    for (Fiber& f : fibers)
      if (f.stack) munmap(f.stack, kStackBytes);
  }
};
thread_local Emulator t_emu;

void yield_to_scheduler(Fiber* f) {
#ifdef ORACLE_EMU_ASM_SWITCH
  oracle_emu_switch(&f->sp, t_emu.sched_sp);
#else
  swapcontext(&f->ctx, &t_emu.sched_ctx);
#endif
}

void resume(Fiber* f) {
  t_emu.current = f;
  g_index.thread_idx = f->tid;
#ifdef ORACLE_EMU_ASM_SWITCH
  oracle_emu_switch(&t_emu.sched_sp, f->sp);
#else
  swapcontext(&t_emu.sched_ctx, &f->ctx);
#endif
  t_emu.current = nullptr;
}

#ifndef ORACLE_EMU_ASM_SWITCH
void ucontext_entry(unsigned lo, unsigned hi) {
  fiber_main(reinterpret_cast<Fiber*>(((uintptr_t)hi << 32) | (uintptr_t)lo));
}
#endif

// Prepares f's stack so that the next resume starts fiber_main(f).
void start_fiber(Fiber* f) {
  if (!f->stack) {
    void* p = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fatal("cannot allocate a fiber stack");
    f->stack = static_cast<char*>(p);
  }
#ifdef ORACLE_EMU_ASM_SWITCH
  // Frame popped by oracle_emu_switch: [r15][r14][r13][r12][rbx][rbp][ret]
  uintptr_t top = (reinterpret_cast<uintptr_t>(f->stack) + kStackBytes - 16) & ~uintptr_t(15);
  uint64_t* sp = reinterpret_cast<uint64_t*>(top) - 7;
  sp[0] = 0;                                           // r15
  sp[1] = 0;                                           // r14
  sp[2] = reinterpret_cast<uint64_t>(&fiber_main);     // r13: entry
  sp[3] = reinterpret_cast<uint64_t>(f);               // r12: argument
  sp[4] = 0;                                           // rbx
  sp[5] = 0;                                           // rbp
  sp[6] = reinterpret_cast<uint64_t>(&oracle_emu_trampoline);  // return address
  f->sp = sp;  // after `ret`, rsp = top (16-aligned) as the trampoline's call expects
#else
  getcontext(&f->ctx);
  f->ctx.uc_stack.ss_sp = f->stack;
  f->ctx.uc_stack.ss_size = kStackBytes;
  f->ctx.uc_link = nullptr;
  uintptr_t p = reinterpret_cast<uintptr_t>(f);
  makecontext(&f->ctx, (void (*)())ucontext_entry, 2, (unsigned)(p & 0xffffffffu), (unsigned)(p >> 32));
#endif
}

// Releases a barrier whose live participants have all arrived.
void maybe_release_block() {
  if (t_emu.block_arrived > 0 && t_emu.block_arrived == t_emu.block_live) {
    t_emu.block_arrived = 0;
    t_emu.block_gen++;
  }
}
void maybe_release_warp(WarpState& w) {
  if (w.arrived > 0 && w.arrived == w.live) {
    w.arrived = 0;
    w.gen++;
  }
}

void fiber_main(Fiber* f) {
  t_emu.thunk(t_emu.closure);
  f->done = true;
  t_emu.block_live--;
  WarpState& w = t_emu.warps[f->warp];
  w.live--;
  w.live_mask &= ~(1u << f->lane);
  maybe_release_block();
  maybe_release_warp(w);
  yield_to_scheduler(f);
  fatal("a finished fiber was resumed");
}

Fiber* require_fiber(const char* what) {
  Fiber* f = t_emu.current;
  if (!f) {
    std::fprintf(stderr, "cuda_emu: %s in a kernel launched without sync=true\n", what);
    std::abort();
  }
  return f;
}

bool runnable(const Fiber& f) {
  if (f.done) return false;
  if (f.wait == Wait::Block) return t_emu.block_gen != f.wait_gen;
  if (f.wait == Wait::Warp) return t_emu.warps[f.warp].gen != f.wait_gen;
  return true;
}

// Runs one block as fibers until every thread has finished.
void run_block_fibers(int n_threads) {
  Emulator& e = t_emu;
  e.block_live = n_threads;
  e.block_arrived = 0;
  for (int i = 0; i < (int)e.warps.size(); i++) {
    WarpState& w = e.warps[i];
    w.live = std::min(32, n_threads - 32 * i);
    w.live_mask = w.live == 32 ? 0xffffffffu : ((1u << w.live) - 1u);
    w.arrived = 0;
  }
  for (int i = 0; i < n_threads; i++) {
    Fiber& f = e.fibers[i];
    f.done = false;
    f.wait = Wait::None;
    f.parity = 0;
    start_fiber(&f);
  }
  while (e.block_live > 0) {
    bool progressed = false;
    for (int i = 0; i < n_threads; i++) {
      Fiber& f = e.fibers[i];
      if (!runnable(f)) continue;
      f.wait = Wait::None;
      progressed = true;
      resume(&f);
    }
    if (!progressed) fatal("deadlock: a barrier or warp primitive was not reached by every live thread");
  }
}

void set_block_index(dim3 grid, unsigned b) {
  g_index.block_idx = uint3{b % grid.x, (b / grid.x) % grid.y, b / (grid.x * grid.y)};
}

}  // namespace

namespace {
thread_local long long t_launches = 0;
}  // namespace

long long launches_run() { return t_launches; }

void launch_raw(KernelThunk thunk, void* closure, dim3 grid, dim3 block, size_t shared_bytes,
                bool sync) {
  Emulator& e = t_emu;
  t_launches++;
  if (e.thunk) fatal("nested kernel launch");
  const int n_threads = (int)(block.x * block.y * block.z);
  const unsigned n_blocks = grid.x * grid.y * grid.z;
  // The GPU's launch limits, so a configuration that would fail there fails here.
  if (n_threads <= 0 || n_threads > 1024 || block.z > 64) fatal("block size must be 1..1024 threads (z <= 64)");
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535)
    fatal("grid dimensions must be >= 1 with y, z <= 65535");
  if (shared_bytes > 48 * 1024) fatal("more than 48 KiB of dynamic shared memory needs an opt-in attribute");
  e.thunk = thunk;
  e.closure = closure;
  e.dynamic_shared.assign(shared_bytes, 0);
  g_index.block_dim = block;
  g_index.grid_dim = grid;
  if (sync) {
    if ((int)e.fibers.size() < n_threads) e.fibers.resize(n_threads);
    e.warps.assign((n_threads + 31) / 32, WarpState{});
    for (int i = 0; i < n_threads; i++) {
      Fiber& f = e.fibers[i];
      f.tid = uint3{i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
      f.warp = i / 32;
      f.lane = i % 32;
    }
  }
  for (unsigned b = 0; b < n_blocks; b++) {
    set_block_index(grid, b);
    if (sync) {
      run_block_fibers(n_threads);
      continue;
    }
    for (int i = 0; i < n_threads; i++) {  // fast path: plain calls
      g_index.thread_idx = uint3{i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
      thunk(closure);
    }
  }
  e.thunk = nullptr;
  e.closure = nullptr;
}

void syncthreads() {
  Fiber* f = require_fiber("__syncthreads");
  Emulator& e = t_emu;
  e.block_arrived++;
  if (e.block_arrived == e.block_live) {  // last to arrive: release everyone, go on
    e.block_arrived = 0;
    e.block_gen++;
    return;
  }
  f->wait = Wait::Block;
  f->wait_gen = e.block_gen;
  yield_to_scheduler(f);
}

namespace {
void warp_barrier(Fiber* f) {
  WarpState& w = t_emu.warps[f->warp];
  w.arrived++;
  if (w.arrived == w.live) {
    w.arrived = 0;
    w.gen++;
    return;
  }
  f->wait = Wait::Warp;
  f->wait_gen = w.gen;
  yield_to_scheduler(f);
}
}  // namespace

void syncwarp() { warp_barrier(require_fiber("__syncwarp")); }

// Double-buffered: a lane can be at most one exchange ahead of the slowest lane
// of its warp (the barrier), so it never overwrites a buffer still being read.
// The first lane to arrive resets the buffer's depositor mask: by then every
// lane has finished reading that buffer's previous exchange.
Exchange warp_exchange(uint64_t bits) {
  Fiber* f = require_fiber("a warp shuffle/vote");
  WarpState& w = t_emu.warps[f->warp];
  const int p = f->parity;
  f->parity ^= 1;
  if (w.arrived == 0) w.deposited[p] = 0;
  w.slots[p][f->lane] = bits;
  w.deposited[p] |= 1u << f->lane;
  warp_barrier(f);
  return Exchange{w.slots[p], w.deposited[p]};
}

unsigned warp_live_mask() {
  Fiber* f = require_fiber("a warp primitive");
  return t_emu.warps[f->warp].live_mask;
}

int lane_id() { return require_fiber("a warp primitive")->lane; }

void* dynamic_shared() { return t_emu.dynamic_shared.data(); }

}  // namespace emu
