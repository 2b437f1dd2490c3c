// accelmatrix-worker: one per hardware box. Thin: hands its arguments to the worker library.
#include "worker/worker_main.h"

int main(int argc, char** argv) { return am::worker::worker_main(argc, argv); }
