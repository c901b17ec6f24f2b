// The spread of a command's cases over MPI ranks (docs/performance.md, "Sweeps across
// machines"): `mpirun -np N tpusim sweep SPEC` or `... autodistribute ...` gives case i to
// rank i % N, and rank 0 gathers the results in case order and writes the files, as one
// process would. OpenMPI through Boost.MPI; only the CLI links it, the library sees a
// CaseRunner (api/case_runner.hpp).
#pragma once

#include <functional>

#include "api/case_runner.hpp"

namespace tpusim::cli {

// Whether an MPI launcher started this process: mpirun (OMPI_COMM_WORLD_SIZE), a PMIx one
// such as srun --mpi=pmix (PMIX_RANK), or a PMI-2 one (PMI_RANK).
bool launchedByMpi();

// Runs `command` with this process's case runner and returns its exit code. Started by an
// MPI launcher: MPI is initialized, each rank runs its cases with `jobs` worker processes,
// and only rank 0 gets the results (the command writes nothing on the others). An error
// on one rank of several prints its line with the rank and aborts every rank
// (MPI_Abort), so that no rank waits for one that has gone. Otherwise: no MPI at all, and
// the cases run on this machine with `jobs` worker processes.
int withCaseRunner(int jobs, const std::function<int(const CaseRunner& runner)>& command);

}  // namespace tpusim::cli
