package lsmlake.harness;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;

import org.apache.paimon.fileindex.FileIndexPredicate;
import org.apache.paimon.fileindex.FileIndexResult;
import org.apache.paimon.fileindex.bitmap.BitmapIndexResult;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataFilePathFactory;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.RowType;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/** File-index checks: a predicate from JSON, and Java's FileIndexPredicate evaluated on each data file. */
final class FileIndexCheck {

    private FileIndexCheck() {}

    /** ["column", op, literal...] with op one of = != < <= > >= in between is_null is_not_null. */
    static Predicate predicate(RowType type, JsonArray where) {
        PredicateBuilder pb = new PredicateBuilder(type);
        int i = pb.indexOf(where.get(0).getAsString());
        DataType t = type.getTypeAt(i);
        String op = where.get(1).getAsString();
        switch (op) {
            case "is_null":
                return pb.isNull(i);
            case "is_not_null":
                return pb.isNotNull(i);
            case "in":
                List<Object> literals = new ArrayList<>();
                for (int k = 2; k < where.size(); k++) {
                    literals.add(Harness.fromJson(where.get(k), t));
                }
                return pb.in(i, literals);
            case "between":
                return pb.between(
                        i, Harness.fromJson(where.get(2), t), Harness.fromJson(where.get(3), t));
            default:
                break;
        }
        Object literal = Harness.fromJson(where.get(2), t);
        switch (op) {
            case "=":
                return pb.equal(i, literal);
            case "!=":
                return pb.notEqual(i, literal);
            case "<":
                return pb.lessThan(i, literal);
            case "<=":
                return pb.lessOrEqual(i, literal);
            case ">":
                return pb.greaterThan(i, literal);
            case ">=":
                return pb.greaterOrEqual(i, literal);
            default:
                throw new IllegalArgumentException("unknown predicate op: " + op);
        }
    }

    /** Per data file of the latest snapshot: Java's file-index verdict on the predicate. */
    static JsonObject evaluate(FileStoreTable table, Predicate predicate) throws Exception {
        JsonArray files = new JsonArray();
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit ds = (DataSplit) split;
            DataFilePathFactory paths =
                    table.store().pathFactory().createDataFilePathFactory(ds.partition(), ds.bucket());
            for (DataFileMeta file : ds.dataFiles()) {
                RowType rowType = table.schemaManager().schema(file.schemaId()).logicalRowType();
                JsonObject out = new JsonObject();
                out.addProperty("file", file.fileName());
                out.addProperty("embedded", file.embeddedIndex() != null);
                FileIndexPredicate index = null;
                if (file.embeddedIndex() != null) {
                    index = new FileIndexPredicate(file.embeddedIndex(), rowType);
                } else {
                    for (String extra : file.extraFiles()) {
                        if (extra.endsWith(DataFilePathFactory.INDEX_PATH_SUFFIX)) {
                            index =
                                    new FileIndexPredicate(
                                            paths.toAlignedPath(extra, file), table.fileIO(), rowType);
                        }
                    }
                }
                if (index == null) {
                    out.addProperty("indexed", false);
                    files.add(out);
                    continue;
                }
                try (FileIndexPredicate p = index) {
                    FileIndexResult result = p.evaluate(predicate);
                    out.addProperty("indexed", true);
                    out.addProperty("remain", result.remain());
                    if (result instanceof BitmapIndexResult) {
                        JsonArray rows = new JsonArray();
                        Iterator<Integer> it = ((BitmapIndexResult) result).get().iterator();
                        while (it.hasNext()) {
                            rows.add(it.next());
                        }
                        out.add("rows", rows);
                    }
                }
                files.add(out);
            }
        }
        JsonObject answer = new JsonObject();
        answer.add("files", files);
        return answer;
    }
}
