#!/usr/bin/env bash
# The GPU recipe (run_fade_qwen2_5_7b_math.sh), run for real on CPU: verl's own main_ppo with FADE,
# a tiny model, a small arithmetic dataset and fade's math reward, 3 steps with a checkpoint at
# step 2, then step 3 again in a second process resumed from that checkpoint. No GPU, no download.
#
#     bash examples/verl/cpu_smoke.sh OUT [more Hydra overrides, given to both runs]
#
# e.g. `... OUT algorithm.adv_estimator=grpo` runs verl's own estimator the same way. It prints
# verl's console log (the `step:` lines with the fade/... metrics), writes OUT/full.log and
# OUT/resumed.log (and verl's file logger's OUT/*.metrics.jsonl), checks the runs
# (cpu_smoke_check.py) and exits non-zero if a step or a check fails. PYTHON picks the interpreter
# (python3); fade-rl[verl,math] must be installed in it. RESUME=0 skips the resumed run.
set -euo pipefail

if [ $# -lt 1 ]; then
    echo "usage: bash $0 OUT [Hydra overrides...]" >&2
    exit 2
fi
OUT=$1
shift
HERE=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-python3}
export PYTHON
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$OUT"  # Hydra writes its outputs/ folder in the working directory
rm -rf "$OUT/full" "$OUT/resumed" "$OUT"/*.log "$OUT"/*.metrics.jsonl
SECONDS=0

# 1. a tiny Llama with its tokenizer, and train/test parquet files of the arithmetic task
"$PYTHON" "$HERE/cpu_smoke_inputs.py" "$OUT"

# 2. the GPU recipe with the CPU switch, the tiny model and data, and small sizes. Only sizes,
#    paths, the reward function (for this data) and the loggers differ from the recipe. One PPO
#    update per step (the mini-batch is the batch): verl orders a batch by when its rollouts
#    finish, which differs between processes, and the split into mini-batches would follow it.
export FADE_VERL_CPU=1
export MODEL_PATH="$OUT/model" TRAIN_FILES="$OUT/data/train.parquet" VAL_FILES="$OUT/data/test.parquet"
export N_GPUS=1 NNODES=1 ROLLOUT_N=4 ROLLOUT_TP=1 PROJECT=fade EXPERIMENT=cpu_smoke
sizes=(
    data.train_batch_size=8
    data.max_prompt_length=16
    data.max_response_length=8
    data.dataloader_num_workers=0
    actor_rollout_ref.actor.ppo_mini_batch_size=8
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=1024
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=1024
    actor_rollout_ref.rollout.agent.num_workers=1
    reward.num_workers=1
    transfer_queue.backend.SimpleStorage.num_data_storage_units=1
    reward.custom_reward_function.path=pkg://fade.verifiers.rewards
    reward.custom_reward_function.name=compute_score
    'trainer.logger=["console","file"]'
    trainer.val_before_train=False
    trainer.test_freq=-1
    trainer.save_freq=2
    trainer.total_training_steps=3
)

echo "== 3 steps, checkpoint at step 2: $OUT/full"
VERL_FILE_LOGGER_PATH="$OUT/full.metrics.jsonl" CKPT_DIR="$OUT/full" bash "$HERE/run_fade_qwen2_5_7b_math.sh" "${sizes[@]}" "$@" 2>&1 | tee "$OUT/full.log"

if [ "${RESUME:-1}" = 1 ]; then
echo "== step 3 again, in a new process resumed from $OUT/full/global_step_2: $OUT/resumed"
VERL_FILE_LOGGER_PATH="$OUT/resumed.metrics.jsonl" CKPT_DIR="$OUT/resumed" bash "$HERE/run_fade_qwen2_5_7b_math.sh" "${sizes[@]}" \
    trainer.resume_mode=resume_path trainer.resume_from_path="$OUT/full/global_step_2" "$@" 2>&1 \
    | tee "$OUT/resumed.log"
fi

# 3. every step ran, fade's metrics reached verl's logger, the resumed step 3 is the uninterrupted one
"$PYTHON" "$HERE/cpu_smoke_check.py" "$OUT" "$@"
echo "cpu smoke: passed in ${SECONDS}s"
