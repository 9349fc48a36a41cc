"""Every tunable of gpusvd in one place.

Values are read at call time, so tests (and users chasing performance) can change
them with :func:`override`. Each default says where it came from.
"""

import contextlib
import dataclasses
import math

import numpy as np


@dataclasses.dataclass
class Tunables:
    # Householder panel width of the blocked bidiagonalization (paper 000, Alg. 2).
    # LAPACK's dgebrd uses 32; on the GPU a wider panel makes the trailing update a
    # larger GEMM. The measurement that chose 32 is not recorded.
    bidiag_block_size: int = 32
    # Reflectors per compact-WY block when applying Q and P (apply_q/apply_p), independent
    # of the panel width: wider blocks are fewer, larger GEMMs and fewer GPU launches, at
    # about nb/m more flops. NumPy, Q·I for n = 2000: 0.41–0.47 s at 32, 0.30–0.37 s at 64,
    # 0.27–0.31 s from 128 to 256, 0.37 s at 512.
    back_transform_block_size: int = 128
    # QR sweeps applied to X and Y in one pass over them (the on-chip window of the
    # rotation kernel, paper 000 Alg. 4/5 generalized to several sweeps). 8 or 16: at 32
    # the float64 kernel spills registers and takes minutes to compile.
    rotation_window: int = 16
    # Sweeps the bidiagonal QR emits before the driver applies them: bounds the
    # host memory of the rotation log and lets the GPU apply one chunk while the
    # CPU computes the next.
    qr_chunk_sweeps: int = 256
    # Smallest number of matrix entries for which device="auto" sends NumPy input
    # to a GPU: below it the transfers and launches cost more than they gain.
    auto_gpu_min_entries: int = 256 * 256
    # QUIC-SVD (paper 001). Most cosine-tree leaves split per step: the paper splits one; a
    # step of many makes the device work GEMMs and bounds host syncs to three per step.
    # Leaves double per step up to this, so a rank-k basis takes ~log2(k) + k/(2·batch)
    # steps: 256 reaches rank 500 of a 16384² matrix in ~10 steps, with candidate blocks of
    # n × 512 (32 MiB in float32 at n = 16384).
    quic_split_batch: int = 256
    # A step that splits every leaf while the bound is above this many times the target
    # splits their children too (quic/growth.py, "Two levels a step"): the next step would
    # have split them all anyway. Infinity: one level a step (BENCHMARKS.md, "Low-rank SVD
    # with a guaranteed error").
    quic_two_levels_above: float = 64.0
    # Basis vectors per block of the blocked Gram–Schmidt: "approximately 20" (paper 001
    # §2.2, their trade-off between speed and stability).
    quic_gs_block: int = 20
    # The same on the GPU; 0: the whole basis in one block. Gram–Schmidt projects twice
    # (quic/gram_schmidt.py), so the block size does not matter for stability, and one
    # block is two GEMMs of n × k × c instead of k/20 memory-bound pairs and their
    # launches; 20 and 64 took 7% and 3% longer (BENCHMARKS.md, "The tunables' defaults").
    quic_gs_block_gpu: int = 0
    # Gram–Schmidt (quic/gram_schmidt.py) projects a block's kept vectors out once more
    # when a candidate loses "most of its norm", its remainder below this fraction of its
    # length: then one projection may leave components along V̂ of order u·‖x‖/‖x'‖
    # (Daniel, Gragg, Kaufman & Stewart 1976, Parlett 1980 §6-9).
    quic_reorthogonalize_below: float = 1.0 / math.sqrt(2.0)
    # Monte Carlo sample counts, O(log m) as in Holmes et al. 2008: max(min, factor·ln rows)
    # for a node, and (larger: it decides when to stop) for a whole partition.
    quic_node_samples: tuple = (8, 2.0)
    quic_global_samples: tuple = (32, 8.0)
    # The basis grows until the Monte Carlo bound is this fraction of eps·‖A‖²_F, leaving
    # the rest of eps to the truncation of the extracted SVD (a smaller final rank).
    quic_growth_margin: float = 0.5
    # Share of free device (host) memory a partition and its work may use when
    # partitions=None: two partition buffers, P = A·V̂ and temporaries must fit.
    quic_device_memory_fraction: float = 0.6
    quic_host_memory_fraction: float = 0.25
    # The float32 extraction's (quic/extraction.py small_svd) U_R = R·W·Σ⁻¹ is used as it
    # is while σ_r² ≥ this·(u₆₄/u)·σ₁²,
    # so that its orthogonality ≈ c·u₆₄·σ₁²/σ_r² stays under the working precision's u (c,
    # the eigensolver's backward error in units of u₆₄·‖G‖, taken as this margin: a small
    # multiple in practice; the worst-case bound grows with k); past it U_R is the Q of a
    # float64 QR of R·W_r. Float32, k = 60, dividing: orthogonality 0.13 k·ε at σ_k/σ₁ =
    # 1e-5 (far past this threshold, 3.4e-4), 350 k·ε at 1e-7.
    quic_gram_divide_above: float = 64.0
    # Threads copying a partition into pinned memory (one memcpy thread reaches about a
    # fifth of the 54 GB/s pinned PCIe bandwidth, docs/design.md) and the chunk each copies.
    # Measured on the H100's host, 150000 × 140000 float32 from host memory, depth 8: 8
    # threads of 64 MB 31.3 GB/s, 16 of 64 MB 37.2, 16 of 256 MB 38.4 (70% of pinned;
    # BENCHMARKS.md, "Low-rank SVD with a guaranteed error (QUIC-SVD)").
    quic_reader_threads: int = 16
    quic_read_chunk_bytes: int = 256 << 20
    # Most partitions a streamed pass keeps on the device (quic/pipeline.py PinnedFeeder):
    # the loader runs up to this many − 1 partitions ahead of the computation, so that
    # the copy engine keeps working while one partition's tree grows (1.4 s of a 3.7 s
    # pass at 150000 × 140000 float32 on the H100 with 2). Measured there: 2 buffers
    # 15.2 GB/s, 8 buffers 31.3 GB/s.
    quic_stream_depth: int = 8
    # distributed.svd_lowrank: basis vectors the ranks add together (an equal share each)
    # before their bases are merged and growth goes on from the merged one. Ranks growing
    # apart find overlapping vectors that Gram–Schmidt cannot drop (near, not in, each
    # other's span): merged only at the end, 2 and 4 CPU ranks made bases of 74 and 139
    # vectors for a rank-30 matrix (8000 × 400) whose single-process basis had 30. Merging
    # every chunk lets each rank's Monte Carlo bound see the others' vectors; measured on
    # a 2-core CPU machine, chunk 8, 16, 32: bases of 32–40 on 2 and 4 ranks.
    quic_merge_chunk: int = 32
    # Lanes per pivot pair of the CUDA inner Jacobi kernel (jacobi/kernels/inner_jacobi.cu):
    # 4, 8, 16 or 32, or 0 for about 4 rows of g per lane. Fewer lanes mean fewer warps
    # computing the same rotation (less issue pressure) but longer loops per p-step; the
    # default ties with 16 and beats 4, 8 and 32 by 14–54% at 2048² (BENCHMARKS.md, "The
    # tunables' defaults").
    jacobi_inner_lanes: int = 0
    # Distributed Jacobi on GPUs, pairs_per_rank=None: the most pivot block-pairs per rank
    # that keep each pair at least this many columns wide (distributed/outer.py). n =
    # 16384 float64 on two H200s: c = 1 (pairs of 8192) 31.1 s, c = 2 (pairs of 4096)
    # 25.8 s; the single GPU 47.0 s. Narrower pairs were predicted slower (p-step
    # latency), not measured.
    distributed_pair_width: int = 4096
    # Takagi (paper 002). Matrices of order below this use the paper's pointwise parallel
    # steps (Alg. 2, one pass over A and U per step); from it on the blocked form
    # (takagi/driver.py), whose passes are n/b per sweep instead of n. A prediction from
    # the pass counts; at 128 and 512 the pointwise steps take 2.8× and 2.5× the blocked
    # form's time (BENCHMARKS.md, "The tunables' defaults"); below 128 not measured.
    takagi_blocked_min_n: int = 128
    # Indices per block b of the blocked form: the 2b×2b tile and its unitary sit in shared
    # memory (complex128, b = 32: 2·64·65·16 B = 133 KB of the H100's 227 KB per block).
    # A matrix of at most 2b indices is one tile: the GPU factors it in one launch
    # (takagi_solve_one_tile), every step inside the kernel, instead of a launch, three
    # GEMMs and a host synchronization per sweep (H200, n = 16-64: 0.40-2.74 ms against
    # 4.9-8.3 ms by the sweeps).
    takagi_block_size: int = 32
    # Inner sweeps over each 2b×2b tile per block step. Measured on the CPU (the same
    # arithmetic as the GPU), random complex symmetric n = 256 and 512, b = 16 and 32: 1, 2
    # or 3 inner sweeps all took the same outer sweeps (9–10 at 256, 11 at 512), so more
    # inner work buys nothing: one.
    takagi_inner_sweeps: int = 1
    # Threads per thread block of the CUDA inner solve (takagi_solve_block_pairs): one
    # warp forms each step's rotations while the others update G; the tile's 2×2 updates
    # (b² of them, 1024 at b = 32) share all warps. Measured on the H100 at n = 2048:
    # complex128 0.482 s with 256, 0.498 s with 512 (1024 does not launch: registers);
    # complex64 0.252 / 0.251 / 0.274 s with 256 / 512 / 1024. So 256.
    takagi_solve_threads: int = 256
    # Blocked Jacobi SVD (paper 003): columns per block-column b; each block pair is
    # shortened to a 2b×2b factor for the inner Jacobi. The paper's b = 16 (2b = 32, one
    # warp per column) fitted a Kepler's 16 kB of shared memory; kept on the CPU, where the
    # inner Numba Jacobi's cost per column grows with 2b: b = 32 took 1.4–1.8× its time at
    # 96 and 200 columns, 0.74–0.78× at 400 and 800 (BENCHMARKS.md, "The tunables'
    # defaults"; a crossover near 300 columns would gain there, not yet built).
    jacobi_block_width: int = 16
    # Largest inner sweeps per block pair in the full-block variant (the paper's Ms = 30).
    jacobi_inner_sweeps: int = 30
    # Block width b of the blocked Jacobi SVD on the GPU (jacobi/blocked.py block_width):
    # b = 32, inner order 64, halves the p-steps per block sweep (and their launches) of
    # b = 16 at the same GEMM flops per sweep; g and v of order 64 fit the inner kernel's
    # shared memory up to complex128 (133 kB of 227); b = 16 took 29% longer at 2048²
    # (BENCHMARKS.md, "The tunables' defaults").
    jacobi_block_width_gpu: int = 32
    # Takagi's blocked step update on the GPU (takagi/block_update_cuda.py): U's GEMM on a
    # second stream, overlapping the next inner solve (which occupies only n/(2b) SMs).
    takagi_update_overlap: bool = True
    # Bandwidth b of the two-stage reduction (condensed/): stage 1 (dense → band, GEMMs)
    # gets faster as b grows, stage 2 (bulge chasing, ≈ 8n²b flops in a sequential loop)
    # slower. b = 32 was fastest or tied on the CPU (stage 1 + stage 2, n = 1000 and 2000)
    # and, against 64, on the GPU (values at 4096–16384, float64 and float32; NOTES.md,
    # "Where things stand": the two-stage crossovers).
    two_stage_bandwidth: int = 32
    # reduction="auto" of svd/svdvals(method="gr"), values only: the two-stage reduction
    # (condensed/driver.py) from min(m, n) >= this, the one-stage one below it. GPU, b = 32:
    # two-stage over one-stage time 0.51–0.57 at 4096, 0.39–0.45 at 8192 (float64, float32);
    # 2048 and below not measured (NOTES.md, the two-stage crossovers).
    two_stage_values_min_n_gpu: int = 4096
    # CPU, one thread: two-stage over one-stage time 1.61 at n = 4, 1.01 at 8, 0.86 at 10,
    # 0.26–0.96 from 16 to 2000 in float64, complex128 alike; float32 from n = 1000 takes
    # 1.15–1.24× (probably: the one-stage reduction's memory-bound half gains from 4-byte
    # words, the bulge chasing does not). So two-stage from 10 (NOTES.md, as above).
    two_stage_values_min_n_cpu: int = 10
    # reduction="auto" of svd(method="gr") with vectors on the CPU: the two-stage
    # reduction (condensed.driver.two_stage_svd: dbdsdc + dqds, blocked back-
    # transformations) for min(m, n) in [min, max), the one-stage one outside. One thread,
    # float64, economy: two-stage over one-stage time 1.18 at n = 8, 0.87 at 16, 0.56–0.97
    # from 32 to 500 (NOTES.md, the two-stage crossovers); with stage 2's back-
    # transformation by passes (condensed/chase_back.py), Gaussian, medians of 3: 0.75 at
    # 600, 0.87 at 700, 0.91 at 1000, 0.99 at 1300 on one thread; on two 1.00 at 700,
    # 0.95 at 1000, 1.10 at 1300, 1.06 at 1600.
    two_stage_vectors_min_n_cpu: int = 16
    two_stage_vectors_max_n_cpu: int = 1100
    # reduction="auto" of svd(method="gr") with vectors on the GPU: the two-stage reduction
    # (its bidiagonal divide and conquer on the device) from min(m, n) >= this. Economy
    # SVD: the two tie at 2048; at 4096 the two-stage one takes 0.54 (float64) and 0.66
    # (float32) of the one-stage time (NOTES.md, the two-stage crossovers).
    two_stage_vectors_min_n_gpu: int = 4096
    # method="auto" on the GPU for values only (svdvals, svd(compute_uv=False)) of real
    # matrices: "gr" (the two-stage reduction) from min(m, n) >= these, "polar" below:
    # the first sizes measured where gr is ahead, 4096 in float64 (4096 is also where the
    # two-stage reduction starts: two_stage_values_min_n_gpu) and 4608 in float32 (at
    # 4096 polar is ahead) (BENCHMARKS.md, "Values only on the GPU").
    auto_values_gr_min_n_gpu_float64: int = 4096
    auto_values_gr_min_n_gpu_float32: int = 4608
    # The same for complex matrices, values only and with vectors: "gr" from min(m, n) >=
    # these, the sizes from which it overtakes polar (BENCHMARKS.md, "Complex matrices on
    # the GPU": values from 4096, vectors only from 8192).
    auto_values_gr_min_n_gpu_complex: int = 4096
    auto_vectors_gr_min_n_gpu_complex: int = 8192
    # The SVD with vectors of a real matrix: "gr" from min(m, n) >= these, the first sizes
    # measured where it is ahead of polar (float64: polar at 4096, gr at 6144; float32:
    # polar at 6144; BENCHMARKS.md, "Exact SVD of one square matrix on the GPU").
    auto_vectors_gr_min_n_gpu_float64: int = 6144
    auto_vectors_gr_min_n_gpu_float32: int = 8192
    # Share of the GPU's free memory (with CuPy's pool's free blocks) that one chunk of a
    # stack may take in the polar SVD (polar/svd.py); a larger stack is
    # decomposed chunk by chunk rather than running out of memory. A half leaves room
    # for cuSOLVER's workspaces and for the caller's other arrays.
    batched_memory_share: float = 0.5
    # Largest min(m, n) of a stack that the polar method takes through the batched engine;
    # larger matrices go one by one through the one-matrix driver, whose own cost then
    # dwarfs the loop's. One 1024² matrix takes 41 ms through the engine against 37 ms
    # through the driver, but 50 × 1024² float64 0.28 s against 1.8 s; one 2048² matrix
    # 117 ms against 80 (NOTES.md, "Batched engine").
    batched_max_n: int = 1024
    # QDWH's Gram estimates of α and l₀ (polar/estimates.py from_gram) run their power
    # iterations by repeated squaring, the inverse one through the explicit L⁻¹ (one
    # triangular solve with n right-hand sides, then products), while batch·n³ is at most
    # this: at 2048² for one matrix, 2000 × 128² or 500 × 256², the solve is a few GFlop;
    # above, plain power iteration and two solves a step.
    batched_explicit_inverse_max_work: int = 2 ** 33
    # The polar SVD (polar/svd.py) takes QDWH's estimates of α and l₀ for double-
    # precision matrices of at least this many columns; below, α = √(‖A‖₁‖A‖_∞) and
    # l₀ = ε (JAX's choice): the estimates' ~50 CuPy calls cost more host time than the
    # second QR step they save, at 768² they tie, from 1536² they win (NOTES.md, "One
    # matrix of 128–1024 and tall matrices: QDWH", and open question 3).
    polar_estimates_min_n: int = 768
    # Matrices up to this many columns take their QDWH estimates from the Gram matrix in
    # one host synchronization, where the power and inverse iterations with the LU factors
    # synchronize about 20 times: the Gram estimates are faster up to 8192² (3072² 9.5
    # against 21 ms, 8192² 58 against 69), and where their σ_min is not trusted (κ ≳ 1e5)
    # l₀ = ε costs no more. Larger matrices are unmeasured and keep LU (NOTES.md, as above).
    polar_gram_estimates_max_n: int = 8192
    # Columns (a closed range) of the matrices whose QDWH QR steps factor [√c·X; I] by
    # shifted CholeskyQR3 (polar/qdwh.py, on the namespaces of cholesky_qr_namespaces):
    # κ([√c·X; I]) ≤ √(1 + c), ≤ 3.5e10 from l₀ = ε in float64, inside its reach at these
    # sizes. Against Householder QR on the H100 (polar and SVD of one Gaussian matrix):
    # 1024² 1 ms faster (of 14–35), 2048² 1–3 ms faster (of 35–89); 256² and 512² 1–2 ms
    # slower (more CuPy calls than GPU work), 4096² float32 12 ms slower (the float64 Gram
    # products). From 1000 columns: the R factor of a tall 100000 × 1000 matrix is on the
    # faster side (NOTES.md, as above).
    qdwh_cholesky_qr_columns: tuple = (1000, 2048)
    # Tall matrices of at most this many entries (4 GiB in float64) are reduced before
    # QDWH by shifted CholeskyQR3 in float64 (polar/cholesky_qr.py), whose work is three
    # float64 copies of A; past it, or where it fails, by Householder QR.
    cholesky_qr_max_entries: int = 2 ** 28
    # The array namespaces that take shifted CholeskyQR3 for the tall QR and QDWH's QR
    # steps where it applies: the GPU's. On the CPU LAPACK's Householder QR is as fast in
    # fewer flops; tests add "numpy" to run the GPU's arithmetic there.
    cholesky_qr_namespaces: tuple = ("cupy",)
    # Where the polar SVD of one real matrix takes the fixed sequence
    # (polar/fixed_schedule.py): the GPU, where it is captured into a CUDA graph. Tests
    # add "numpy" to route their suites through its NumPy twin (eager).
    fixed_schedule_namespaces: tuple = ("cupy",)
    # Columns up to which the fixed sequence serves: replayed, it is faster than the eager
    # driver up to 1024 (H100, float64 1024² 25.0–26.2 ms against 30.4–36.0; float32
    # 17.9–18.0 against 25.4–26.9); past it the eager driver's estimates and their host
    # cost were not measured against it (NOTES.md, "One matrix below 1025 columns: a CUDA
    # graph").
    fixed_schedule_max_n: int = 1024
    # Columns up to which the fixed sequence captures cuSOLVER's XsyevBatched into its
    # graph: at 512 the capture works, from 513 it fails (XsyevBatched status 6; H100,
    # CUDA 13). Above, only the QDWH part and H are replayed as a graph.
    fixed_schedule_graph_eigh_max_n: int = 512
    # Singular values per Numba task of the bisection solver (bidiagonal/bisection.py),
    # bisected together so that their independent chains of divisions overlap: one value's
    # Sturm count is a chain of 2n dependent divisions, latency-bound. Measured in NOTES.md
    # ("Bisection for the bidiagonal's values").
    bisection_cpu_lanes: int = 8
    # Threads per block of the CUDA bisection kernel (whole warps, two values' groups of
    # lanes a warp): one warp per block spreads the warps over all SMs; with one thread a
    # value 64–256 made no difference within 1% (BENCHMARKS.md, "The tunables'
    # defaults").
    bisection_threads_per_block: int = 32
    # Thread blocks per SM of stage 2's GPU bulge chasing (condensed/bulge_cuda.py), each
    # running one sweep at a time; the grid is also capped by the sweeps that can run at
    # once (bulge_cuda.sweeps_in_flight: 257 at n = 8192, b = 32). One block an SM is
    # fastest: a second block on an SM slows both sweeps' tasks, and every task is on the
    # chase's critical path (BENCHMARKS.md, "The tunables' defaults").
    chase_blocks_per_sm: int = 1
    # Stage 2 on the GPU (condensed/kernels/bulge.cu); off, a CuPy band is chased by the
    # Numba loop on a host copy (8192, b = 32: 10.2 s against 0.35 s on the H100). On: 1,222
    # chases of 8 bands on the H100 were finite and bitwise identical run to run
    # (bench/results/stress_bulge_h100_s8.json), so the kernel shows no race.
    chase_on_gpu: bool = True
    # Leaves of the bidiagonal divide and conquer (bidiagonal/dc_svd.py): at most
    # this many rows, solved by LAPACK on the host (stacked by shape, over host threads).
    # Larger leaves mean fewer merges, whose bottom levels' GEMMs dominate the solver with
    # leaves of 32; 256 is faster at 4096 and slower at 8192 (BENCHMARKS.md, "The
    # tunables' defaults").
    divide_conquer_leaf_size: int = 128
    # Merges of bidiagonal/dc_svd.py with at most this many rows update U and V with the
    # rest of their tree level, all their rows against their kept columns in one batched
    # GEMM a matrix, instead of the GEMMs split by the columns' supports: up to twice the
    # flops, but a handful of launches a level instead of ~15 a merge, which on a GPU is
    # most of a small merge's time; the largest merges batched as well were slower
    # (BENCHMARKS.md, "The tunables' defaults").
    divide_conquer_dense_merge_rows: int = 4096
    # Deflation's column rotations in bidiagonal/dc_svd.py by the namespace's compiled twin
    # (a Numba loop over blocks of rows on NumPy; rotate_pairs.cu on CuPy, one launch per
    # merge); off, by whole-column array operations, six CuPy launches per rotation where a
    # merge of clustered values deflates by rotation up to k − 1 times. Off is the
    # reference the tests compare the twins with.
    divide_conquer_rotation_kernel: bool = True
    # Columns of C a slab of chase_back's passes on the CPU, one thread a slab: n = 500,
    # one thread, 32 columns 0.0186 s, 64 0.0157, 256 0.0155, all 500 0.0199.
    chase_back_panel_columns_cpu: int = 256
    # Reflectors of stage 1's back-transformation applied as one compact WY block
    # (band.py's _apply_blocks): consecutive panels of b are merged up to this many, so the
    # three GEMMs a block have this inner dimension and C's rows are read and written once
    # a block instead of once a panel. At most b: one panel a block. On the GPU only for
    # C of back_transform_merge_min_n_gpu rows or more: merging a run takes about 30
    # small launches, which a smaller C does not repay (BENCHMARKS.md, "The tunables'
    # defaults"); the host has no launches to pay and merges at every size.
    back_transform_block_columns: int = 256
    back_transform_merge_min_n_gpu: int = 8192
    # Largest entry of a matrix (_core/scaling.py largest_entries_on_device) by one
    # whole-array reduction up to this many entries: past 2^31 (where CUB's segmented
    # reduction does not go) CuPy's own kernel takes 1.77 s for the maximum of 2.2e9
    # float32 entries on the H100, against QR's 0.69 s, so beyond it the maxima of the
    # rows (of the columns if wider than tall) come first, in parallel.
    scaling_one_pass_entries: int = (1 << 31) - 1
    # Iteration limits, LAPACK's MAXIT: a solver that reaches its limit raises
    # LinAlgError. Raising one trades time for convergence on a hard case.
    # Steps per root of a secular equation (bidiagonal/secular.py; the CUDA twin takes it
    # as a kernel argument): dlaed4's and dlasd4's MAXIT.
    secular_max_steps: int = 30
    # Bidiagonal QR (bidiagonal/qr.py): at most this·n² inner steps (one step is one
    # rotation pair of a QR sweep), as dbdsqr's MAXITR = 6; paper 000's Alg. 3 allows 12·n².
    # The limit also sets the threshold's floor, this·n²·underflow, as in dbdsqr.
    bidiagonal_qr_max_iteration_factor: int = 6
    # dqds (bidiagonal/dqds.py): steps (failed ones included) per singular value; dlasq2
    # allows 100.
    dqds_max_steps_per_value: int = 100
    # QDWH steps before it raises (polar/qdwh.py): NBG §3 proves ≤ 6 from l₀ = ε for
    # κ ≤ 10¹⁶; an estimated l₀ that proves too large costs its own schedule (≤ 6) and
    # SETTLE_STEPS before the restart from ε: 6 + 2 + 6 + 2.
    qdwh_max_iterations: int = 16


_TUNABLES = Tunables()


def get() -> Tunables:
    """The tunables in force."""
    return _TUNABLES


def gr_on_gpu(k, dtype, compute_uv):
    """Whether ``method="auto"`` takes the Golub–Reinsch SVD (the two-stage reduction) on
    the GPU for matrices of min(M, N) = ``k`` in the working ``dtype``: from the
    crossovers ``auto_*_gr_min_n_gpu*`` on, where it overtakes the polar method."""
    t, kind = _TUNABLES, np.dtype(dtype).kind
    if not compute_uv:
        if kind == "c":
            return k >= t.auto_values_gr_min_n_gpu_complex
        if np.dtype(dtype) == np.float32:
            return k >= t.auto_values_gr_min_n_gpu_float32
        return k >= t.auto_values_gr_min_n_gpu_float64
    if kind == "c":
        return k >= t.auto_vectors_gr_min_n_gpu_complex
    if np.dtype(dtype) == np.float32:
        return k >= t.auto_vectors_gr_min_n_gpu_float32
    return k >= t.auto_vectors_gr_min_n_gpu_float64


@contextlib.contextmanager
def override(**values):
    """Set some tunables for the duration of a ``with`` block.

    >>> from gpusvd._core import tunables
    >>> with tunables.override(bidiag_block_size=8):
    ...     tunables.get().bidiag_block_size
    8
    """
    unknown = set(values) - {f.name for f in dataclasses.fields(Tunables)}
    if unknown:
        raise ValueError(f"unknown tunables {sorted(unknown)}")
    saved = {name: getattr(_TUNABLES, name) for name in values}
    for name, value in values.items():
        setattr(_TUNABLES, name, value)
    try:
        yield _TUNABLES
    finally:
        for name, value in saved.items():
            setattr(_TUNABLES, name, value)
