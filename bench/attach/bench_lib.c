// The library the benchmark loads: nothing but a constructor, so the pause is the injector's.
__attribute__((constructor)) static void loaded(void) {}
