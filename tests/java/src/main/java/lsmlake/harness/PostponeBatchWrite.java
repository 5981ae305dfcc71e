package lsmlake.harness;

import org.apache.paimon.CoreOptions;
import org.apache.paimon.bucket.BucketFunction;
import org.apache.paimon.codegen.CodeGenUtils;
import org.apache.paimon.codegen.Projection;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.schema.TableSchema;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.PostponeUtils;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.sink.RowPartitionKeyExtractor;
import org.apache.paimon.table.sink.TableWriteImpl;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The batch write of a postpone-bucket table with 'postpone.batch-write-fixed-bucket' = true, as Flink's
 * batch sink runs it (FlinkSinkBuilder's postpone branch, PostponeBatchWriteOperator, PostponeFixedBucketSink)
 * with a given writer parallelism: known bucket counts per partition from the real buckets' files, else
 * min(parallelism, max-parallelism); rows hashed into those buckets by a write-only fixed-bucket writer;
 * each commit message carries its partition's count as total buckets; the commit checks conflicts.
 */
final class PostponeBatchWrite {

    private PostponeBatchWrite() {}

    static void run(FileStoreTable table, List<InternalRow> rows, int parallelism, IOManager io)
            throws Exception {
        Map<BinaryRow, Integer> known = new HashMap<>(PostponeUtils.getKnownNumBuckets(table));
        FileStoreTable forWrite = PostponeUtils.tableForFixBucketWrite(table);
        int defaultNum =
                Math.min(
                        Math.max(parallelism, 1),
                        table.coreOptions().postponeBatchWriteFixedBucketMaxParallelism());
        TableSchema schema = table.schema();
        BucketFunction bucketFunction =
                BucketFunction.create(
                        new CoreOptions(table.options()), schema.logicalBucketKeyType());
        Projection bucketKey =
                CodeGenUtils.newProjection(
                        schema.logicalRowType(), schema.projection(schema.bucketKeys()));
        RowPartitionKeyExtractor partitions = new RowPartitionKeyExtractor(schema);
        BatchWriteBuilder builder = forWrite.newBatchWriteBuilder();
        List<CommitMessage> messages = new ArrayList<>();
        try (TableWriteImpl<?> write = (TableWriteImpl<?>) builder.newWrite()) {
            write.withIOManager(io);
            write.getWrite().withIgnoreNumBucketCheck(true);
            for (InternalRow row : rows) {
                BinaryRow partition = partitions.partition(row);
                int num = known.computeIfAbsent(partition.copy(), p -> defaultNum);
                write.write(row, bucketFunction.bucket(bucketKey.apply(row), num));
            }
            for (CommitMessage m : write.prepareCommit()) {
                CommitMessageImpl message = (CommitMessageImpl) m;
                messages.add(
                        new CommitMessageImpl(
                                message.partition(),
                                message.bucket(),
                                known.get(message.partition()),
                                message.newFilesIncrement(),
                                message.compactIncrement()));
            }
        }
        try (BatchTableCommit commit = builder.newCommit()) {
            commit.commit(messages);
        }
    }
}
