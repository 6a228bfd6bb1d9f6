// SPDX-License-Identifier: GPL-3.0-or-later
// Nothing to compile: the target vibra_test_pch exists to build Catch2's precompiled header once
// for every test program (tests/CMakeLists.txt, VIBRA_TEST_PCH).
