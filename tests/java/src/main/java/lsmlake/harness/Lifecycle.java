package lsmlake.harness;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;

import org.apache.paimon.CoreOptions;
import org.apache.paimon.Snapshot;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.consumer.Consumer;
import org.apache.paimon.consumer.ConsumerManager;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.operation.ListUnexistingFiles;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.partition.actions.SuccessFileMarkDoneAction;
import org.apache.paimon.partition.file.SuccessFile;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.table.ExpireChangelogImpl;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The table-lifecycle operations of the harness's "lifecycle" command (its "action" names one), each
 * the core logic a Paimon procedure runs (the Flink/Spark procedures are thin wrappers over these):
 * set_option, rescale, consumer, expire_changelogs, purge, compact_manifest, rollback_to_timestamp,
 * rollback_to_watermark, rename_branch, mark_done, success_file, remove_unexisting, rename_tag,
 * replace_tag, create_tag_from_timestamp.
 */
final class Lifecycle {

    private Lifecycle() {}

    static JsonObject run(Catalog catalog, FileStoreTable table, JsonObject command, IOManager io)
            throws Exception {
        String action = command.get("action").getAsString();
        JsonObject answer = new JsonObject();
        switch (action) {
            case "set_option":
                {
                    // ALTER TABLE SET ('key' = 'value'), or RESET ('key') when value is null
                    Identifier id = Identifier.fromString(command.get("table").getAsString());
                    String key = command.get("key").getAsString();
                    SchemaChange change =
                            nullOrMissing(command, "value")
                                    ? SchemaChange.removeOption(key)
                                    : SchemaChange.setOption(key, command.get("value").getAsString());
                    catalog.alterTable(id, Collections.singletonList(change), false);
                    return answer;
                }
            case "rescale":
                return rescale(table, command, io);
            case "consumer":
                return consumer(table, command);
            case "expire_changelogs":
                {
                    ExpireChangelogImpl expire = (ExpireChangelogImpl) table.newExpireChangelog();
                    if (command.has("delete_all") && command.get("delete_all").getAsBoolean()) {
                        expire.expireAll();
                        answer.addProperty("expired", -1);
                        return answer;
                    }
                    ExpireConfig.Builder config = ExpireConfig.builder();
                    if (!nullOrMissing(command, "retain_max")) {
                        config.changelogRetainMax(command.get("retain_max").getAsInt());
                    }
                    if (!nullOrMissing(command, "retain_min")) {
                        config.changelogRetainMin(command.get("retain_min").getAsInt());
                    }
                    if (!nullOrMissing(command, "time_retain_ms")) {
                        config.changelogTimeRetain(
                                Duration.ofMillis(command.get("time_retain_ms").getAsLong()));
                    }
                    answer.addProperty("expired", expire.config(config.build()).expire());
                    return answer;
                }
            case "purge":
                table.purgeFiles();
                return answer;
            case "compact_manifest":
                try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
                    commit.compactManifests();
                }
                return answer;
            case "rollback_to_timestamp":
            case "rollback_to_watermark":
                {
                    long value = command.get("value").getAsLong();
                    Snapshot snapshot =
                            "rollback_to_timestamp".equals(action)
                                    ? table.snapshotManager().earlierOrEqualTimeMills(value)
                                    : table.snapshotManager().earlierOrEqualWatermark(value);
                    if (snapshot == null) {
                        throw new IllegalArgumentException("no snapshot earlier than " + value);
                    }
                    table.rollbackTo(snapshot.id());
                    answer.addProperty("snapshot", snapshot.id());
                    return answer;
                }
            case "rename_branch":
                table.renameBranch(
                        command.get("name").getAsString(), command.get("to").getAsString());
                return answer;
            case "mark_done":
                {
                    SuccessFileMarkDoneAction done =
                            new SuccessFileMarkDoneAction(table.fileIO(), table.location());
                    for (JsonElement p : command.getAsJsonArray("partitions")) {
                        done.markDone(p.getAsString());
                    }
                    return answer;
                }
            case "success_file":
                {
                    Path path =
                            new Path(
                                    new Path(table.location(), command.get("partition").getAsString()),
                                    "_SUCCESS");
                    SuccessFile file = SuccessFile.safelyFromPath(table.fileIO(), path);
                    answer.add("json", file == null ? JsonNull.INSTANCE : new JsonPrimitive(file.toJson()));
                    if (file != null) {
                        answer.addProperty("creation_time", file.creationTime());
                        answer.addProperty("modification_time", file.modificationTime());
                    }
                    return answer;
                }
            case "remove_unexisting":
                return removeUnexisting(table, command);
            case "rename_tag":
                table.renameTag(command.get("name").getAsString(), command.get("to").getAsString());
                return answer;
            case "replace_tag":
                table.replaceTag(
                        command.get("name").getAsString(),
                        nullOrMissing(command, "id") ? null : command.get("id").getAsLong(),
                        nullOrMissing(command, "time_retained_ms")
                                ? null
                                : Duration.ofMillis(command.get("time_retained_ms").getAsLong()));
                return answer;
            case "create_tag_from_timestamp":
                {
                    // CreateTagFromTimestampProcedure: the first snapshot (or tag) at or after the time
                    long ts = command.get("value").getAsLong();
                    Snapshot snapshot = table.snapshotManager().laterOrEqualTimeMills(ts);
                    for (Snapshot tagged : table.tagManager().tags().keySet()) {
                        if (ts <= tagged.timeMillis()) {
                            if (snapshot == null || tagged.timeMillis() < snapshot.timeMillis()) {
                                snapshot = tagged;
                            }
                            break;
                        }
                    }
                    if (snapshot == null) {
                        throw new IllegalArgumentException("no snapshot later than " + ts);
                    }
                    table.createTag(command.get("name").getAsString(), snapshot.id());
                    answer.addProperty("snapshot", snapshot.id());
                    return answer;
                }
            default:
                throw new IllegalArgumentException("unknown lifecycle action: " + action);
        }
    }

    private static boolean nullOrMissing(JsonObject command, String key) {
        return !command.has(key) || command.get(key).isJsonNull();
    }

    private static Map<String, String> spec(JsonObject command, String key) {
        Map<String, String> out = new HashMap<>();
        if (!nullOrMissing(command, key)) {
            for (Map.Entry<String, JsonElement> e : command.getAsJsonObject(key).entrySet()) {
                out.put(e.getKey(), e.getValue().getAsString());
            }
        }
        return out;
    }

    /**
     * What Flink's RescaleAction (and Spark's RescaleProcedure) do, without Flink: the latest snapshot's
     * rows of the partition read, then written in overwrite mode by a copy of the table whose in-memory
     * schema has the new `bucket` (the schema on storage is not changed), strict mode set to that
     * snapshot.
     */
    private static JsonObject rescale(FileStoreTable table, JsonObject command, IOManager io)
            throws Exception {
        Snapshot snapshot =
                table.latestSnapshot()
                        .orElseThrow(() -> new IllegalArgumentException("no snapshot to rescale"));
        Map<String, String> strict = new HashMap<>();
        strict.put(
                CoreOptions.COMMIT_STRICT_MODE_LAST_SAFE_SNAPSHOT.key(), String.valueOf(snapshot.id()));
        FileStoreTable base = table.copy(strict);
        Map<String, String> partition = spec(command, "partition");
        Map<String, String> bucketOptions = new HashMap<>(base.options());
        if (nullOrMissing(command, "bucket_num") && base.coreOptions().bucket() == -2) {
            // RescaleAction's own check
            throw new IllegalArgumentException(
                    "When rescaling postpone bucket tables, you must provide the resulting bucket number.");
        }
        if (!nullOrMissing(command, "bucket_num")) {
            bucketOptions.put(CoreOptions.BUCKET.key(), command.get("bucket_num").getAsString());
        }
        FileStoreTable rescaled = base.copy(base.schema().copy(bucketOptions));
        ReadBuilder read = base.newReadBuilder().withPartitionFilter(partition);
        List<Split> splits = read.newScan().plan().splits();
        BatchWriteBuilder builder = rescaled.newBatchWriteBuilder().withOverwrite(partition);
        try (BatchTableWrite write = (BatchTableWrite) builder.newWrite().withIOManager(io);
                BatchTableCommit commit = builder.newCommit();
                RecordReader<InternalRow> reader = read.newRead().createReader(splits)) {
            RecordReader.RecordIterator<InternalRow> batch;
            while ((batch = reader.readBatch()) != null) {
                InternalRow row;
                while ((row = batch.next()) != null) {
                    write.write(row);
                }
                batch.releaseBatch();
            }
            commit.commit(write.prepareCommit());
        }
        JsonObject answer = new JsonObject();
        Long latest = table.snapshotManager().latestSnapshotId();
        answer.add("snapshot", latest == null ? JsonNull.INSTANCE : new JsonPrimitive(latest));
        return answer;
    }

    /** ConsumerManager: "get" (id), "list", "reset" (id, next), "delete" (id), "clear" (including, excluding). */
    private static JsonObject consumer(FileStoreTable table, JsonObject command) throws Exception {
        ConsumerManager manager =
                new ConsumerManager(
                        table.fileIO(), table.location(), table.snapshotManager().branch());
        String sub = command.get("sub").getAsString();
        JsonObject answer = new JsonObject();
        switch (sub) {
            case "get":
                answer.add(
                        "next",
                        manager.consumer(command.get("id").getAsString())
                                .<JsonElement>map(c -> new JsonPrimitive(c.nextSnapshot()))
                                .orElse(JsonNull.INSTANCE));
                return answer;
            case "list":
                {
                    JsonObject all = new JsonObject();
                    for (Map.Entry<String, Long> e : manager.consumers().entrySet()) {
                        all.addProperty(e.getKey(), e.getValue());
                    }
                    answer.add("consumers", all);
                    return answer;
                }
            case "reset":
                {
                    // ResetConsumerProcedure: the snapshot must exist
                    long next = command.get("next").getAsLong();
                    table.snapshotManager().snapshot(next);
                    manager.resetConsumer(command.get("id").getAsString(), new Consumer(next));
                    return answer;
                }
            case "delete":
                manager.deleteConsumer(command.get("id").getAsString());
                return answer;
            case "clear":
                {
                    String including =
                            nullOrMissing(command, "including")
                                    ? ".*"
                                    : command.get("including").getAsString();
                    Pattern excluding =
                            nullOrMissing(command, "excluding")
                                    ? null
                                    : Pattern.compile(command.get("excluding").getAsString());
                    manager.clearConsumers(Pattern.compile(including), excluding);
                    return answer;
                }
            default:
                throw new IllegalArgumentException("unknown consumer action: " + sub);
        }
    }

    /**
     * Flink's RemoveUnexistingFilesAction: per partition, ListUnexistingFiles finds the live data files
     * missing on storage; each bucket's become the deleted files of a data increment, all committed
     * together (unless dry_run). The paths.
     */
    private static JsonObject removeUnexisting(FileStoreTable table, JsonObject command)
            throws Exception {
        boolean dryRun = command.has("dry_run") && command.get("dry_run").getAsBoolean();
        ListUnexistingFiles operation = new ListUnexistingFiles(table);
        List<CommitMessage> messages = new ArrayList<>();
        JsonArray paths = new JsonArray();
        for (BinaryRow partition : table.newScan().listPartitions()) {
            Map<Integer, Map<String, DataFileMeta>> missing = operation.list(partition);
            for (Map.Entry<Integer, Map<String, DataFileMeta>> e : missing.entrySet()) {
                messages.add(
                        new CommitMessageImpl(
                                partition,
                                e.getKey(),
                                table.coreOptions().bucket(),
                                new DataIncrement(
                                        Collections.emptyList(),
                                        new ArrayList<>(e.getValue().values()),
                                        Collections.emptyList()),
                                CompactIncrement.emptyIncrement()));
                for (String p : e.getValue().keySet()) {
                    paths.add(p);
                }
            }
        }
        if (!dryRun && !messages.isEmpty()) {
            try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
                commit.commit(messages);
            }
        }
        JsonObject answer = new JsonObject();
        answer.add("paths", paths);
        return answer;
    }
}
