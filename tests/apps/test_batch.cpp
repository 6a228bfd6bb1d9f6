// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra batch` end to end on small rendered clips with exact truth: the campaign table (status,
// measured φ against the truth, β and g-peak per row), a broken video among good ones, resume
// (unchanged videos skipped, a changed one redone, kill -9 mid-run then rerun = a clean run),
// shards + --collect = one run, two processes on one OUTDIR, manifests and their errors.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>

#include "test_support.hpp"
#include "vibra/store/table_file.hpp"
#include "vibra/store/trajectory_file.hpp"

using namespace vibra;
namespace fs = std::filesystem;

namespace {

std::string q(const std::string& s) { return "'" + s + "'"; }

bool have_batch() { return test::run_vibra("batch --help").exit_code == 0; }

/// Four 256² clips at φ 0.30/0.45/0.60/0.75 (walls at the image border, so the truth's φ is the
/// image's) with their truth files. Made once for every test process of this build: rendered
/// into a folder of their own, then renamed into place (a process that loses the race uses the
/// winner's).
const fs::path& clips() {
    static const fs::path dir = fs::path(VIBRA_BINARY_DIR) / "test-scratch" / "batch_clips_v1";
    static bool made = false;
    if (made || fs::exists(dir / "truth0.75.h5")) return made = true, dir;
    const fs::path tmp = dir.string() + ".tmp" + std::to_string(getpid());
    fs::remove_all(tmp);
    fs::create_directories(tmp / "videos");
    for (const char* phi : {"0.30", "0.45", "0.60", "0.75"}) {
        const auto r = test::run_vibra(
            "synth -o " + q((tmp / "videos" / ("phi" + std::string(phi) + ".avi")).string()) + " --truth " +
            q((tmp / ("truth" + std::string(phi) + ".h5")).string()) +
            " --width 256 --height 256 --frames 80 --margin 0 --look dark-ring --noise 0.03 --seed 3 "
            "--packing-fraction " +
            phi + " -q");
        REQUIRE(r.exit_code == 0);
    }
    std::error_code ec;
    fs::rename(tmp, dir, ec);
    if (ec) fs::remove_all(tmp);  // another process was first
    REQUIRE(fs::exists(dir / "truth0.75.h5"));
    made = true;
    return dir;
}

/// A folder of the four clips (copies, so a test may change one) plus, optionally, a truncated video.
fs::path dataset(const test::TempDir& d, bool with_broken) {
    const auto v = d.path() / "videos";
    fs::create_directories(v);
    for (const auto& e : fs::directory_iterator(clips() / "videos"))
        fs::copy_file(e.path(), v / e.path().filename());
    if (with_broken) {
        std::ifstream in(clips() / "videos" / "phi0.60.avi", std::ios::binary);
        std::string bytes(2'000'000, '\0');
        in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        std::ofstream(v / "broken.avi", std::ios::binary)
            .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    return v;
}

// The truth's packing fraction in the window `vibra track` analyses: the image inset by the
// large radius (docs/tracking.md, "Edges"), disks counted by their centre, mean over frames.
// (Near the box's walls disk centres are sparser, so this is above the box's nominal fraction.)
double truth_phi(const std::string& phi) {
    store::TrajectoryReader r((clips() / ("truth" + phi + ".h5")).string());
    const auto t = r.read_all();
    const auto& m = r.meta();
    const double inset = *std::max_element(m.species_diameters.begin(), m.species_diameters.end()) / 2;
    const double x0 = inset, y0 = inset, x1 = static_cast<double>(m.image_width) - inset,
                 y1 = static_cast<double>(m.image_height) - inset;
    double area = 0;
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
        if (t.rows.x[i] < x0 || t.rows.x[i] > x1 || t.rows.y[i] < y0 || t.rows.y[i] > y1) continue;
        const double d = m.species_diameters.at(static_cast<std::size_t>(t.rows.species[i]));
        area += M_PI * d * d / 4;
    }
    return area / static_cast<double>(t.index.n_frames()) / ((x1 - x0) * (y1 - y0));
}

template <class T>
const std::vector<T>& column(const store::Table& t, const std::string& name) {
    const auto* c = t.find(name);
    INFO("column " << name);
    REQUIRE(c != nullptr);
    REQUIRE(std::holds_alternative<std::vector<T>>(c->data));
    return std::get<std::vector<T>>(c->data);
}

std::size_t row_of(const store::Table& t, const std::string& name) {
    const auto& n = column<std::string>(t, "name");
    const auto it = std::find(n.begin(), n.end(), name);
    REQUIRE(it != n.end());
    return static_cast<std::size_t>(it - n.begin());
}

int count_lines(const fs::path& file, const std::string& needle) {
    std::ifstream in(file);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) n += line.rfind("$ ", 0) == 0 && line.find(needle) != std::string::npos;
    return n;
}

/// Every column of two trajectory files' rows, equal bit for bit.
void require_same_trajectories(const fs::path& a, const fs::path& b) {
    store::TrajectoryReader ra(a.string()), rb(b.string());
    REQUIRE(ra.n_frames() == rb.n_frames());
    const auto ta = ra.read_frames(0, ra.n_frames()), tb = rb.read_frames(0, rb.n_frames());
    REQUIRE(ta.rows.x == tb.rows.x);
    REQUIRE(ta.rows.y == tb.rows.y);
    REQUIRE(ta.rows.particle == tb.rows.particle);
    REQUIRE(ta.rows.species == tb.rows.species);
    REQUIRE(ta.rows.radius == tb.rows.radius);
}

/// The table without the columns that measure this run's own time and memory.
std::string table_without_timings(const fs::path& csv) {
    std::ifstream in(csv);
    std::string header;
    std::getline(in, header);
    std::vector<bool> keep;
    std::stringstream hs(header);
    std::string cell;
    while (std::getline(hs, cell, ','))
        keep.push_back(!cell.ends_with("_s") && !cell.ends_with("_mb") &&
                       cell.rfind("time_", 0) != 0);  // times, memory
    std::string out, line;
    in.clear();
    in.seekg(0);
    while (std::getline(in, line)) {
        std::stringstream ls(line);
        std::size_t j = 0;
        while (std::getline(ls, cell, ',')) out += keep.at(j++) ? cell + "," : "";
        out += "\n";
    }
    return out;
}

/// vibra processes (other than tests) whose command line mentions `path`: stages left running.
int stages_running(const std::string& path) {
    int n = 0;
    for (const auto& e : fs::directory_iterator("/proc")) {
        std::ifstream in(e.path() / "cmdline", std::ios::binary);
        std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        n += cmd.rfind(VIBRA_CLI, 0) == 0 && cmd.find(path) != std::string::npos;
    }
    return n;
}

const std::string kRadii = " --radius-small 6 --radius-large 8 ";

}  // namespace

TEST_CASE("batch: four clips and a truncated one — a table of four ok rows and one failed, figures, exit 1",
          "[integration][batch]") {
    if (!have_batch()) {
        WARN("vibra built without the tracking module: no batch command");
        return;
    }
    test::TempDir d("batch_main");
    const auto videos = dataset(d, true);
    const auto out = d.path() / "out";
    const auto r =
        test::run_vibra("batch " + q(videos.string()) + " -o " + q(out.string()) + kRadii + "--plot phi");
    INFO(r.output);
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("1 video(s) failed: broken") && Catch::Contains("truncated"));
    const auto t = store::read_table_h5((out / "campaign.h5").string(), "vibra-campaign", "campaign");
    REQUIRE(t.rows() == 5);
    for (const auto& c : t.columns) {  // the table's own contract: every column has units and a meaning
        INFO(c.name);
        REQUIRE(!c.description.empty());
    }
    const auto& status = column<std::string>(t, "status");
    const auto& error = column<std::string>(t, "error");
    const auto& phi = column<double>(t, "phi");
    const auto& beta_s = column<double>(t, "beta_small");
    const auto& beta_l = column<double>(t, "beta_large");
    const auto& g_peak = column<double>(t, "g_peak");
    const auto& D = column<double>(t, "D_small");
    REQUIRE(status[row_of(t, "broken")] == "failed");
    REQUIRE_THAT(error[row_of(t, "broken")], Catch::Contains("truncated"));
    REQUIRE(column<std::string>(t, "stage")[row_of(t, "broken")] == "track");
    for (const std::string p : {"0.30", "0.45", "0.60", "0.75"}) {
        const auto i = row_of(t, "phi" + p);
        INFO("phi" << p << ": measured " << phi[i] << ", truth " << truth_phi(p));
        REQUIRE(status[i] == "ok");
        REQUIRE(std::abs(phi[i] - truth_phi(p)) < 0.02);
        REQUIRE(std::isfinite(beta_s[i]));
        REQUIRE(std::isfinite(beta_l[i]));
        REQUIRE(column<double>(t, "beta_small_ci_low")[i] < beta_s[i]);
        REQUIRE(column<double>(t, "beta_small_ci_high")[i] > beta_s[i]);
        REQUIRE(g_peak[i] > 1);
        REQUIRE(D[i] > 0);
        REQUIRE(column<std::int64_t>(t, "frames")[i] == 80);
        REQUIRE(column<double>(t, "track_cpu_s")[i] > 0);
        for (const char* part : {"track_decode_s", "track_detect_s", "track_link_s", "track_write_s"}) {
            INFO(part);
            REQUIRE(column<double>(t, part)[i] > 0);
            REQUIRE(column<double>(t, part)[i] <
                    2 * column<double>(t, "track_wall_s")[i]);  // summed over two threads at most
        }
        REQUIRE(column<double>(t, "time_gr")[i] >= 0);
        REQUIRE(fs::exists(out / ("phi" + p) / "figures" / "gr.png"));
        REQUIRE(fs::exists(out / ("phi" + p) / "results.h5"));
    }
    // denser clips hold more disks per frame
    REQUIRE(column<double>(t, "particles_per_frame")[row_of(t, "phi0.75")] >
            column<double>(t, "particles_per_frame")[row_of(t, "phi0.30")]);
    REQUIRE(fs::exists(out / "campaign.csv"));
    REQUIRE(fs::exists(out / "figures" / "beta_small_vs_phi.png"));
    for (const auto& e : fs::recursive_directory_iterator(out)) {  // no debris
        INFO(e.path());
        REQUIRE(e.path().extension() != ".partial");
        REQUIRE(e.path().extension() != ".spool");
    }
}

TEST_CASE(
    "batch: a rerun skips unchanged videos, redoes a changed one, and redoes only the analysis when its "
    "settings change",
    "[integration][batch]") {
    if (!have_batch()) {
        WARN("vibra built without the tracking module: no batch command");
        return;
    }
    test::TempDir d("batch_resume");
    const auto videos = dataset(d, false);
    const auto out = d.path() / "out";
    const std::string cmd = "batch " + q(videos.string()) + " -o " + q(out.string()) + kRadii +
                            "--no-figures --only gr,msd,velocity_distribution";
    REQUIRE(test::run_vibra(cmd).exit_code == 0);
    const auto mtime = [&](const std::string& v) { return fs::last_write_time(out / v / "trajectories.h5"); };
    const auto before30 = mtime("phi0.30"), before60 = mtime("phi0.60");

    auto r = test::run_vibra(cmd);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.output, Catch::Contains("0 done, 4 unchanged, 0 failed"));
    REQUIRE(mtime("phi0.30") == before30);

    // a changed video (other content) is redone, the rest skipped
    REQUIRE(test::run_vibra("synth -o " + q((videos / "phi0.60.avi").string()) + " --truth " +
                            q(d.file("t.h5")) +
                            " --width 256 --height 256 --frames 80 --margin 0 --look dark-ring --noise 0.03 "
                            "--seed 9 --packing-fraction 0.6 -q")
                .exit_code == 0);
    r = test::run_vibra(cmd);
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.output, Catch::Contains("1 done, 3 unchanged"));
    REQUIRE(mtime("phi0.30") == before30);
    REQUIRE(mtime("phi0.60") != before60);
    REQUIRE(count_lines(out / "phi0.60" / "log.txt", " track ") == 2);

    // other analyses: every video analysed again, none tracked again
    r = test::run_vibra("batch " + q(videos.string()) + " -o " + q(out.string()) + kRadii +
                        "--no-figures --only gr");
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.output, Catch::Contains("4 done, 0 unchanged"));
    REQUIRE(count_lines(out / "phi0.30" / "log.txt", " track ") == 1);
    REQUIRE(count_lines(out / "phi0.30" / "log.txt", " analyze ") == 2);
    REQUIRE(mtime("phi0.30") == before30);
}

TEST_CASE(
    "batch: kill -9 while the third video is tracked, then a rerun resuming from its checkpoint, gives the "
    "files of a clean run and no debris",
    "[integration][batch]") {
    if (!have_batch()) {
        WARN("vibra built without the tracking module: no batch command");
        return;
    }
    test::TempDir d("batch_kill");
    const auto videos = dataset(d, false);
    // the third video long enough (320 frames) that the kill lands while it is tracked
    REQUIRE(test::run_vibra("synth -o " + q((videos / "phi0.60.avi").string()) + " --truth " +
                            q(d.file("t.h5")) +
                            " --width 256 --height 256 --frames 320 --margin 0 --look dark-ring --noise 0.03 "
                            "--seed 3 --packing-fraction 0.6 -q")
                .exit_code == 0);
    const auto clean = d.path() / "clean", killed = d.path() / "killed";
    // checkpoints every 20 frames: a video killed mid-tracking resumes from its last one
    const std::string flags = kRadii + "--no-figures --only gr,msd --threads 2 --checkpoint-every 20 -q";
    REQUIRE(test::run_vibra("batch " + q(videos.string()) + " -o " + q(clean.string()) + flags).exit_code ==
            0);

    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c",
              (std::string("exec '") + VIBRA_CLI + "' batch " + q(videos.string()) + " -o " +
               q(killed.string()) + flags)
                  .c_str(),
              static_cast<char*>(nullptr));
        _exit(127);
    }
    // the third video in sorted order is phi0.60: kill the batch once its tracking has saved two segments
    const auto state = killed / "phi0.60" / "trajectories.h5.ckpt" / "segment_1.state";
    const auto t0 = std::chrono::steady_clock::now();
    while (!fs::exists(state) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    REQUIRE(fs::exists(state));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    std::this_thread::sleep_for(
        std::chrono::milliseconds(200));  // the stage dies with its batch (PR_SET_PDEATHSIG)
    REQUIRE(stages_running(killed.string()) == 0);
    REQUIRE_FALSE(fs::exists(killed / "phi0.75" / "trajectories.h5"));
    const auto first = fs::last_write_time(killed / "phi0.30" / "trajectories.h5");

    // the rerun (with another thread count: the output does not depend on it)
    const auto r = test::run_vibra("batch " + q(videos.string()) + " -o " + q(killed.string()) + kRadii +
                                   "--no-figures --only gr,msd --threads 1 --checkpoint-every 20");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.output, Catch::Contains("phi0.30: unchanged, skipped") &&
                               Catch::Contains("phi0.45: unchanged, skipped"));
    const auto log = test::read_text((killed / "phi0.60" / "log.txt").string());
    INFO(log);
    REQUIRE_THAT(log, Catch::Contains("resumed from the checkpoint"));
    const auto at = log.find('(', log.find("resumed from the checkpoint in "));
    REQUIRE(at != std::string::npos);
    const auto kept = std::stoll(log.substr(at + 1));  // "(N frames kept)"
    REQUIRE(kept >= 40);  // at least the two segments seen before the kill, whole segments only
    REQUIRE(kept < 320);
    REQUIRE(kept % 20 == 0);
    REQUIRE_FALSE(
        fs::exists(killed / "phi0.60" / "trajectories.h5.ckpt"));  // removed once the file is committed
    REQUIRE(fs::last_write_time(killed / "phi0.30" / "trajectories.h5") == first);
    for (const char* v : {"phi0.30", "phi0.45", "phi0.60", "phi0.75"})
        require_same_trajectories(clean / v / "trajectories.h5", killed / v / "trajectories.h5");
    REQUIRE(table_without_timings(clean / "campaign.csv") == table_without_timings(killed / "campaign.csv"));
    for (const auto& e : fs::recursive_directory_iterator(killed)) {
        INFO(e.path());
        REQUIRE(e.path().extension() != ".partial");
        REQUIRE(e.path().extension() != ".spool");
    }
}

TEST_CASE(
    "batch: --shard 0/2 + --shard 1/2 + --collect equals one run, and two processes on one OUTDIR do each "
    "video once",
    "[integration][batch]") {
    if (!have_batch()) {
        WARN("vibra built without the tracking module: no batch command");
        return;
    }
    test::TempDir d("batch_shards");
    const auto videos = dataset(d, false);
    const std::string flags = kRadii + "--no-figures --only gr,msd,velocity_distribution --threads 1 -q";
    const auto one = d.path() / "one", sharded = d.path() / "sharded", twice = d.path() / "twice";
    REQUIRE(test::run_vibra("batch " + q(videos.string()) + " -o " + q(one.string()) + flags).exit_code == 0);
    REQUIRE(
        test::run_vibra("batch " + q(videos.string()) + " -o " + q(sharded.string()) + flags + " --shard 0/2")
            .exit_code == 0);
    {
        const auto t = store::read_table_h5((sharded / "campaign.h5").string(), "vibra-campaign", "campaign");
        const auto& s = column<std::string>(t, "status");
        REQUIRE(std::count(s.begin(), s.end(), "ok") == 2);  // phi0.30, phi0.60
        REQUIRE(std::count(s.begin(), s.end(), "pending") == 2);
        REQUIRE(s[row_of(t, "phi0.30")] == "ok");
        REQUIRE(s[row_of(t, "phi0.60")] == "ok");
    }
    REQUIRE(
        test::run_vibra("batch " + q(videos.string()) + " -o " + q(sharded.string()) + flags + " --shard 1/2")
            .exit_code == 0);
    REQUIRE(
        test::run_vibra("batch " + q(videos.string()) + " -o " + q(sharded.string()) + flags + " --collect")
            .exit_code == 0);
    REQUIRE(table_without_timings(one / "campaign.csv") == table_without_timings(sharded / "campaign.csv"));
    for (const char* v : {"phi0.30", "phi0.45", "phi0.60", "phi0.75"})
        require_same_trajectories(one / v / "trajectories.h5", sharded / v / "trajectories.h5");

    // two processes at once on one OUTDIR: every video tracked exactly once, the table whole
    const std::string b =
        std::string("'") + VIBRA_CLI + "' batch " + q(videos.string()) + " -o " + q(twice.string()) + flags;
    const auto r = test::run("(" + b + " & " + b + " & wait)");
    INFO(r.output);
    for (const char* v : {"phi0.30", "phi0.45", "phi0.60", "phi0.75"})
        REQUIRE(count_lines(twice / v / "log.txt", " track ") == 1);
    REQUIRE(test::run_vibra("batch " + q(videos.string()) + " -o " + q(twice.string()) + flags + " --collect")
                .exit_code == 0);
    REQUIRE(table_without_timings(one / "campaign.csv") == table_without_timings(twice / "campaign.csv"));
}

TEST_CASE(
    "batch: manifests (TOML, CSV) carry settings and control parameters, and their errors name file, line "
    "and key",
    "[integration][batch]") {
    if (!have_batch()) {
        WARN("vibra built without the tracking module: no batch command");
        return;
    }
    test::TempDir d("batch_manifest");
    const auto videos = dataset(d, false);
    test::write_text(
        d.file("m.toml"),
        "# a campaign\n[defaults]\nradius_small = 6\nradius_large = 8\nfps = 1000\npx_per_mm = 4\ngamma = "
        "2.5\n\n"
        "[[video]]\npath = \"videos/phi0.30.avi\"\nphi_nominal = 0.30\nlabel = 'first run'\n\n"
        "[[video]]\npath = \"videos/phi0.75.avi\"\nname = \"dense\"\nphi_nominal = 0.75\ngamma = 3.0\n");
    const auto out = d.path() / "out";
    auto r = test::run_vibra("batch " + q(d.file("m.toml")) + " -o " + q(out.string()) +
                             " --no-figures --only gr -q");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto t = store::read_table_h5((out / "campaign.h5").string(), "vibra-campaign", "campaign");
    REQUIRE(t.rows() == 2);
    const auto i = row_of(t, "phi0.30"), j = row_of(t, "dense");
    REQUIRE(column<double>(t, "phi_nominal")[i] == 0.30);
    REQUIRE(column<double>(t, "phi_nominal")[j] == 0.75);
    REQUIRE(column<double>(t, "gamma")[i] == 2.5);  // from [defaults]
    REQUIRE(column<double>(t, "gamma")[j] == 3.0);  // its own
    REQUIRE(column<std::string>(t, "label")[i] == "first run");
    REQUIRE(column<std::string>(t, "label")[j].empty());
    REQUIRE(column<double>(t, "fps")[i] == 1000);  // the settings reached `vibra track`
    REQUIRE(column<double>(t, "px_per_mm")[i] == 4);

    test::write_text(d.file("m.csv"),
                     "path,name,phi_nominal,radius_small,radius_large\nvideos/"
                     "phi0.45.avi,,0.45,6,8\n\"videos/phi0.60.avi\",mid,0.6,6,8\n");
    r = test::run_vibra("batch " + q(d.file("m.csv")) + " -o " + q(d.file("out_csv")) +
                        " --no-figures --only gr -q");
    REQUIRE(r.exit_code == 0);
    t = store::read_table_h5(d.file("out_csv/campaign.h5"), "vibra-campaign", "campaign");
    REQUIRE(column<double>(t, "phi_nominal")[row_of(t, "mid")] == 0.6);
    REQUIRE(column<std::string>(t, "status")[row_of(t, "phi0.45")] == "ok");

    test::write_text(d.file("bad.toml"), "[defaults]\nfps = fast\n");
    r = test::run_vibra("batch " + q(d.file("bad.toml")) + " -o " + q(d.file("o2")));
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("bad.toml:2") && Catch::Contains("fast"));
    test::write_text(d.file("bad2.toml"), "[video]\npath = \"x.avi\"\n");
    r = test::run_vibra("batch " + q(d.file("bad2.toml")) + " -o " + q(d.file("o2")));
    REQUIRE_THAT(r.output, Catch::Contains("bad2.toml:1") && Catch::Contains("[[video]]"));
    test::write_text(d.file("bad.csv"), "path,phi\na.avi,0.3,7\n");
    r = test::run_vibra("batch " + q(d.file("bad.csv")) + " -o " + q(d.file("o2")));
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("bad.csv:2") && Catch::Contains("3 fields"));
    r = test::run_vibra("batch " + q(videos.string()) + " -o " + q(d.file("o3")) + " --shard 2/2");
    REQUIRE(r.exit_code == 2);
    REQUIRE_THAT(r.output, Catch::Contains("--shard"));
    // a video that does not exist is a failed row naming it; the others finish
    test::write_text(d.file("missing.csv"), "path\nvideos/phi0.30.avi\nvideos/nothere.avi\n");
    r = test::run_vibra("batch " + q(d.file("missing.csv")) + " -o " + q(d.file("o4")) + kRadii +
                        "--no-figures --only gr");
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("nothere.avi: no such video file"));
}

TEST_CASE("batch --slurm writes a job array of N shards and a collect job that waits for it (afterok)",
          "[integration][batch]") {
    if (!have_batch()) {
        WARN("vibra built without the tracking module: no batch command");
        return;
    }
    test::TempDir d("batch_slurm_scripts");
    const auto videos = dataset(d, false);
    const auto out = d.path() / "out";
    const auto r = test::run_vibra("batch " + q(videos.string()) + " -o " + q(out.string()) + kRadii +
                                   "--slurm --shards 2 --threads 1");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto a = test::read_text((out / "slurm" / "batch.sbatch").string());
    REQUIRE_THAT(a, Catch::Contains("#SBATCH --array=0-1") &&
                        Catch::Contains("--shard ${SLURM_ARRAY_TASK_ID}/2") &&
                        Catch::Contains("--radius-small 6") && Catch::Contains("#SBATCH --mem=4G") &&
                        Catch::Contains("no video processed yet"));
    REQUIRE_THAT(test::read_text((out / "slurm" / "collect.sbatch").string()), Catch::Contains("--collect"));
    REQUIRE_THAT(test::read_text((out / "slurm" / "submit.sh").string()),
                 Catch::Contains("--dependency=afterok:"));
    // with videos processed, memory and time come from their measured cost
    REQUIRE(test::run_vibra("batch " + q(videos.string()) + " -o " + q(out.string()) + kRadii +
                            "--no-figures --only gr -q")
                .exit_code == 0);
    REQUIRE(test::run_vibra("batch " + q(videos.string()) + " -o " + q(out.string()) + kRadii +
                            "--slurm --shards 2 -q")
                .exit_code == 0);
    const auto sb = test::read_text((out / "slurm" / "batch.sbatch").string());
    REQUIRE_THAT(sb, Catch::Contains("measured on 4 processed video(s)"));
    // --mem = 1.5 × the largest peak memory of any stage + 256 MB, from the table's own figures
    const auto t = store::read_table_h5((out / "campaign.h5").string(), "vibra-campaign", "campaign");
    double peak = 0;
    for (const char* c : {"track_peak_rss_mb", "analyze_peak_rss_mb"})
        for (double v : column<double>(t, c)) peak = std::max(peak, v);
    const auto at = sb.find("#SBATCH --mem=");
    REQUIRE(at != std::string::npos);
    REQUIRE(std::stol(sb.substr(at + 14)) == static_cast<long>(peak * 1.5 + 256));
}

TEST_CASE(
    "batch: Ctrl-C (SIGINT) during the third video — a message, exit 130, the table, no temporaries, and a "
    "rerun finishes",
    "[integration][batch]") {
    if (!have_batch()) {
        WARN("vibra built without the tracking module: no batch command");
        return;
    }
    test::TempDir d("batch_sigint");
    const auto videos = dataset(d, false);
    // the third video long enough (≈ 1 s of tracking) that the signal lands while it is tracked
    REQUIRE(test::run_vibra("synth -o " + q((videos / "phi0.60.avi").string()) + " --truth " +
                            q(d.file("t.h5")) +
                            " --width 384 --height 384 --frames 400 --margin 0 --look dark-ring --noise 0.03 "
                            "--seed 3 --packing-fraction 0.6 -q")
                .exit_code == 0);
    const auto out = d.path() / "out";
    const std::string log = d.file("batch.log");
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        execl(
            "/bin/sh", "sh", "-c",
            (std::string("exec '") + VIBRA_CLI + "' batch " + q(videos.string()) + " -o " + q(out.string()) +
             kRadii + "--no-figures --only gr,msd,velocity_distribution > " + q(log) + " 2>&1")
                .c_str(),
            static_cast<char*>(nullptr));
        _exit(127);
    }
    // once the third video's tracking has started (its log names the command)
    const auto log3 = out / "phi0.60" / "log.txt";
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120) &&
           (!fs::exists(log3) || test::read_text(log3.string()).find(" track ") == std::string::npos))
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(pid, SIGINT);
    int status = 0;
    waitpid(pid, &status, 0);
    const auto text = test::read_text(log);
    INFO(text);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 130);
    REQUIRE_THAT(
        text, Catch::Contains("interrupted during phi0.60") && Catch::Contains("kept 2 finished video(s)"));
    REQUIRE(stages_running(out.string()) == 0);
    const auto t = store::read_table_h5((out / "campaign.h5").string(), "vibra-campaign", "campaign");
    const auto& st = column<std::string>(t, "status");
    REQUIRE(st[row_of(t, "phi0.30")] == "ok");
    REQUIRE(st[row_of(t, "phi0.60")] == "interrupted");
    REQUIRE(st[row_of(t, "phi0.75")] == "pending");
    for (const auto& e : fs::recursive_directory_iterator(out)) {
        INFO(e.path());
        REQUIRE(e.path().extension() != ".partial");
        REQUIRE(e.path().extension() != ".spool");
    }
    const auto r = test::run_vibra("batch " + q(videos.string()) + " -o " + q(out.string()) + kRadii +
                                   "--no-figures --only gr,msd,velocity_distribution");
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.output, Catch::Contains("2 done, 2 unchanged"));
}

TEST_CASE(
    "track --checkpoint: kill -9 after two segments, the same command resumes there and writes the "
    "uninterrupted file bit for bit",
    "[integration][batch]") {
    if (!have_batch()) {
        WARN("vibra built without the tracking module");
        return;
    }
    test::TempDir d("track_checkpoint");
    const auto clip = d.file("long.avi");
    REQUIRE(test::run_vibra("synth -o " + q(clip) + " --truth " + q(d.file("t.h5")) +
                            " --width 384 --height 384 --frames 240 --packing-fraction 0.6 --look dark-ring "
                            "--noise 0.03 --seed 7 -q")
                .exit_code == 0);
    // A ROI, so that the per-frame count of detections left out (outside_roi) is resumed too.
    const std::string flags = kRadii + "--roi 20,20,364,364 --restart-every 40 ";
    const auto clean = d.file("clean.h5"), out = d.file("out.h5");
    REQUIRE(test::run_vibra("track " + q(clip) + " -o " + q(clean) + flags + "--threads 2 -q").exit_code ==
            0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        execl(VIBRA_CLI, VIBRA_CLI, "track", clip.c_str(), "-o", out.c_str(), "--radius-small", "6",
              "--radius-large", "8", "--roi", "20,20,364,364", "--restart-every", "40", "--threads", "2",
              "--checkpoint", "-q", static_cast<char*>(nullptr));
        _exit(127);
    }
    const auto seg = fs::path(out + ".ckpt") / "segment_1.state";
    const auto t0 = std::chrono::steady_clock::now();
    while (!fs::exists(seg) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    REQUIRE_FALSE(fs::exists(out));  // never a partial file under the final name
    // The same folder as a build writing another state layout left it (its run.id without this
    // build's layout line, a state file of another shape): started afresh, never misread.
    {
        const auto old_out = d.file("old_layout.h5");
        fs::copy(out + ".ckpt", old_out + ".ckpt", fs::copy_options::recursive);
        auto id = test::read_text(old_out + ".ckpt/run.id");
        REQUIRE(id.rfind("checkpoint layout: 2\n", 0) == 0);
        std::ofstream(old_out + ".ckpt/run.id", std::ios::binary | std::ios::trunc) << id.substr(21);
        std::ofstream(old_out + ".ckpt/segment_0.state", std::ios::binary | std::ios::trunc)
            << "VBRACKT1 other";
        const auto r =
            test::run_vibra("track " + q(clip) + " -o " + q(old_out) + flags + "--threads 2 --checkpoint");
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        REQUIRE_THAT(r.output, !Catch::Contains("resumed from the checkpoint"));
        require_same_trajectories(clean, old_out);
        REQUIRE_FALSE(fs::exists(old_out + ".ckpt"));
    }
    // the same settings (another thread count, a summary file: neither changes the output)
    const auto r = test::run_vibra("track " + q(clip) + " -o " + q(out) + flags +
                                   "--threads 1 --checkpoint --report " + q(d.file("rep.txt")));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.output, Catch::Contains("resumed from the checkpoint"));
    const auto rep = test::read_text(d.file("rep.txt"));
    const auto pos = rep.find("resumed_frames = ");
    REQUIRE(pos != std::string::npos);
    const auto kept = std::stoll(rep.substr(pos + 17));
    REQUIRE(kept >= 80);  // the two segments seen before the kill at least, whole segments only
    REQUIRE(kept < 240);
    REQUIRE(kept % 40 == 0);
    require_same_trajectories(clean, out);
    store::TrajectoryReader a(clean), b(out);
    for (const auto& name : a.diagnostics()) REQUIRE(a.read_diagnostic(name) == b.read_diagnostic(name));
    const auto outside = a.read_diagnostic("outside_roi");
    REQUIRE(outside.size() == 240);
    REQUIRE(std::accumulate(outside.begin(), outside.end(), std::int64_t{0}) >
            240);  // disks within 20 px of the edge
    REQUIRE(a.meta().geometry == b.meta().geometry);
    REQUIRE_FALSE(fs::exists(out + ".ckpt"));
    REQUIRE_FALSE(fs::exists(out + ".partial"));
    REQUIRE_FALSE(fs::exists(out + ".spool"));
    // other settings: the checkpoint is not used
    const auto seg0 = fs::path(d.file("o2.h5.ckpt"));
    REQUIRE(
        test::run_vibra("track " + q(clip) + " -o " + q(d.file("o2.h5")) +
                        " --radius-small 6 --radius-large 8 --restart-every 40 --checkpoint --max-step 2 -q")
            .exit_code == 0);
    REQUIRE_FALSE(fs::exists(seg0));
}

TEST_CASE(
    "track: SIGINT and SIGTERM stop the run with a message, exit 130 / 143, no temporaries, the checkpoint "
    "kept",
    "[integration][batch]") {
    if (!have_batch()) {
        WARN("vibra built without the tracking module");
        return;
    }
    test::TempDir d("track_signals");
    const auto clip = d.file("long.avi");
    REQUIRE(test::run_vibra("synth -o " + q(clip) + " --truth " + q(d.file("t.h5")) +
                            " --width 384 --height 384 --frames 400 --packing-fraction 0.6 --look dark-ring "
                            "--noise 0.03 --seed 7 -q")
                .exit_code == 0);
    for (const int sig : {SIGINT, SIGTERM}) {
        for (const bool checkpoint : {false, true}) {
            INFO("signal " << sig << ", checkpoint " << checkpoint);
            const auto out = d.file("out" + std::to_string(sig) + (checkpoint ? "c" : "") + ".h5");
            const auto log = d.file("log" + std::to_string(sig) + (checkpoint ? "c" : ""));
            const pid_t pid = fork();
            REQUIRE(pid >= 0);
            if (pid == 0) {
                execl("/bin/sh", "sh", "-c",
                      (std::string("exec '") + VIBRA_CLI + "' track " + q(clip) + " -o " + q(out) + kRadii +
                       "--restart-every 40" + (checkpoint ? " --checkpoint" : "") + " > " + q(log) + " 2>&1")
                          .c_str(),
                      static_cast<char*>(nullptr));
                _exit(127);
            }
            // once the run is under way (its spool exists), well before its 400 frames are done
            const auto t0 = std::chrono::steady_clock::now();
            while (!fs::exists(out + ".spool") &&
                   std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            kill(pid, sig);
            int status = 0;
            waitpid(pid, &status, 0);
            const auto text = test::read_text(log);
            INFO(text);
            REQUIRE(WIFEXITED(status));
            REQUIRE(WEXITSTATUS(status) == 128 + sig);
            REQUIRE_THAT(text, Catch::Contains("interrupted after") &&
                                   Catch::Contains(sig == SIGINT ? "(SIGINT)" : "(SIGTERM)") &&
                                   Catch::Contains("nothing written to"));
            REQUIRE_FALSE(fs::exists(out));
            REQUIRE_FALSE(fs::exists(out + ".partial"));
            REQUIRE_FALSE(fs::exists(out + ".spool"));
            REQUIRE(fs::exists(out + ".ckpt") == checkpoint);
            if (checkpoint) REQUIRE_THAT(text, Catch::Contains("is kept: the same command resumes from it"));
        }
    }
}
